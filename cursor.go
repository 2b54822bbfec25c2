package projectdata

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
)

// Cursor is the opaque position of a record list: the next_cursor of one
// page, given back as ListOptions.After to read the next. It is signed with
// a key of the project and bound to the table, order and where of its list;
// any other use is ErrInvalidCursor. In JSON an empty Cursor is null.
type Cursor string

// MarshalJSON encodes the cursor as a string, or null when empty.
func (c Cursor) MarshalJSON() ([]byte, error) {
	if c == "" {
		return []byte("null"), nil
	}
	return []byte(`"` + string(c) + `"`), nil // base64url: nothing to escape
}

// cursorVersion is the first byte of every cursor's payload.
const cursorVersion = 1

// cursorMACSize is the bytes of the truncated HMAC-SHA256 ending a cursor.
const cursorMACSize = 16

// encodeCursor makes the cursor holding vals (the last row's values of
// the order's columns), signed for the list whose binding is given.
func encodeCursor(key, binding []byte, vals []any) Cursor {
	payload := []byte{cursorVersion}
	for _, v := range vals {
		payload = appendCursorValue(payload, v)
	}
	payload = append(payload, cursorMAC(key, binding, payload)...)
	return Cursor(base64.RawURLEncoding.EncodeToString(payload))
}

// decodeCursor checks a cursor against the list's binding and returns its
// n values.
func decodeCursor(key, binding []byte, c Cursor, n int) ([]any, error) {
	invalid := errorf(ErrInvalidCursor, "the cursor is not a next_cursor of this table, order and where")
	raw, err := base64.RawURLEncoding.Strict().DecodeString(string(c))
	if err != nil || len(raw) < 1+cursorMACSize {
		return nil, invalid
	}
	payload, mac := raw[:len(raw)-cursorMACSize], raw[len(raw)-cursorMACSize:]
	if !hmac.Equal(mac, cursorMAC(key, binding, payload)) || payload[0] != cursorVersion {
		return nil, invalid
	}
	vals := make([]any, 0, n)
	for rest := payload[1:]; len(rest) > 0; {
		v, next, ok := readCursorValue(rest)
		if !ok {
			return nil, invalid
		}
		vals, rest = append(vals, v), next
	}
	if len(vals) != n {
		return nil, invalid
	}
	return vals, nil
}

// cursorMAC signs a payload for a binding.
func cursorMAC(key, binding, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	m.Write(n[:binary.PutUvarint(n[:], uint64(len(binding)))])
	m.Write(binding)
	m.Write(payload)
	return m.Sum(nil)[:cursorMACSize]
}

// appendCursorValue appends one value, exactly, with its type: n (NULL),
// i (varint), f (IEEE bits), t (text) or b (blob), the last two with their
// length.
func appendCursorValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case int64:
		return binary.AppendVarint(append(b, 'i'), v)
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(v))
	case string:
		return append(binary.AppendUvarint(append(b, 't'), uint64(len(v))), v...)
	case []byte:
		return append(binary.AppendUvarint(append(b, 'b'), uint64(len(v))), v...)
	}
	return append(b, 'n')
}

// readCursorValue reads one value; ok is false when b is malformed.
func readCursorValue(b []byte) (v any, rest []byte, ok bool) {
	kind, b := b[0], b[1:]
	switch kind {
	case 'n':
		return nil, b, true
	case 'i':
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, nil, false
		}
		return x, b[n:], true
	case 'f':
		if len(b) < 8 {
			return nil, nil, false
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), b[8:], true
	case 't', 'b':
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, nil, false
		}
		s, rest := b[n:n+int(l)], b[n+int(l):]
		if kind == 't' {
			return string(s), rest, true
		}
		return append([]byte{}, s...), rest, true
	}
	return nil, nil, false
}
