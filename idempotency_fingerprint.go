package projectdata

import (
	"encoding/json"
	"slices"
	"strconv"
)

// The JSON of idempotency: a Go caller's fingerprint hashes the JSON of the operation's arguments,
// as json.Marshal writes it. appendArgsJSON writes the same bytes without
// reflection for the arguments of the record writes (strings, numbers,
// booleans, rows, lists); anything else it leaves to json.Marshal, so that
// fingerprints never depend on which encoder wrote them (a retry may come
// from another release). An insert's answer is written likewise.

// appendArgsJSON appends v as json.Marshal encodes it; ok is false (and
// dst is to be discarded) when v holds a type it leaves to json.Marshal.
func appendArgsJSON(dst []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendHTMLSafe(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case float64:
		return appendJSONFloat(dst, v)
	case Row:
		return appendMapJSON(dst, v)
	case map[string]any:
		return appendMapJSON(dst, v)
	case []Row:
		return appendListJSON(dst, v)
	case []any:
		return appendListJSON(dst, v)
	}
	return dst, false
}

// appendMapJSON writes an object with its keys sorted, as encoding/json
// writes a map; a nil map is null.
func appendMapJSON[M ~map[string]any](dst []byte, m M) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendHTMLSafe(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendArgsJSON(dst, m[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendListJSON writes an array; a nil slice is null.
func appendListJSON[E any](dst []byte, list []E) ([]byte, bool) {
	if list == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, e := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendArgsJSON(dst, any(e)); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// encodeAnswer appends an operation's results (pointers) to dst as the
// JSON array that json.Marshal writes: an insert's result without
// reflection, any other with json.Marshal.
func encodeAnswer(dst []byte, results []any) ([]byte, error) {
	if len(results) == 1 {
		if r, ok := results[0].(*InsertResult); ok {
			b, err := r.AppendJSON(append(slices.Grow(dst, 64+8*len(r.InsertedIDs)), '['))
			return append(b, ']'), err
		}
	}
	b, err := json.Marshal(results)
	if len(dst) == 0 {
		return b, err
	}
	return append(dst, b...), err
}
