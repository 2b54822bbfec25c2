package projectdata

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// encodedSize is the exact number of bytes a value and its key take in a
// JSON row as the HTTP API encodes it (encoding/json, HTML escaping on):
// `"key":value` and the comma or brace after it. Strings count their
// escapes (\u003c for <, >, &, control characters, U+2028, U+2029 and each
// byte of invalid UTF-8 as \ufffd), blobs their base64 text.
func encodedSize(key string, v any) int {
	n := jsonStringSize(key) + 2 // the colon, and the comma or closing brace
	switch x := v.(type) {
	case nil:
		return n + 4
	case string:
		return n + jsonStringSize(x)
	case []byte:
		if x == nil {
			return n + 4 // null, as encoding/json writes a nil slice (an empty blob)
		}
		return n + (len(x)+2)/3*4 + 2
	case int64:
		return n + len(strconv.AppendInt(nil, x, 10))
	case int:
		return n + len(strconv.Itoa(x))
	case float64:
		return n + jsonFloatSize(x)
	case bool:
		if x {
			return n + 4
		}
		return n + 5
	case json.Number:
		return n + len(x)
	}
	b, _ := json.Marshal(v)
	return n + len(b)
}

// jsonStringSize is the size of s as a JSON string, quotes included.
func jsonStringSize[S string | []byte](s S) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"', b == '\\', b == '\n', b == '\r', b == '\t', b == '\b', b == '\f':
				n += 2
			case b < 0x20, b == '<', b == '>', b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		// A conversion of at most 4 bytes that does not escape: no allocation.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// rowJSONSize is the size of a Row's JSON object whose members (keys and
// values) count sum, as rowValueSize counts each: the opening brace, then
// each member with its comma or the closing brace; {} when it has none.
func rowJSONSize(sum, members int) int {
	if members == 0 {
		return len("{}")
	}
	return 1 + sum
}

// rowsBudget counts the rows of a result against the result budget
// (Options.QueryMaxBytes) as the HTTP answer encodes them: the JSON array
// `[row,row,…]`, its brackets and the commas between rows included.
type rowsBudget struct {
	max  int
	size int // the array's bytes so far, its brackets included
	rows int
}

// newRowsBudget returns the budget of an empty array of rows.
func newRowsBudget(max int) rowsBudget {
	return rowsBudget{max: max, size: len("[]")}
}

// room is the largest row JSON that still fits, its comma aside.
func (b *rowsBudget) room() int {
	if b.rows > 0 {
		return b.max - b.size - 1
	}
	return b.max - b.size
}

// add counts a row whose JSON object takes n bytes, with its comma after
// the first row, and reports true; or, when the row does not fit, counts
// nothing and reports false.
func (b *rowsBudget) add(n int) bool {
	if n > b.room() {
		return false
	}
	if b.rows > 0 {
		b.size++
	}
	b.size += n
	b.rows++
	return true
}

// rowValueSize is encodedSize for a row's value, whose float64 is written
// as appendRealJSON writes it.
func rowValueSize(key string, v any) int {
	if f, ok := v.(float64); ok {
		return jsonStringSize(key) + 2 + realJSONSize(f)
	}
	return encodedSize(key, v)
}

// realJSONSize is the size of f as appendRealJSON writes it.
func realJSONSize(f float64) int {
	n := jsonFloatSize(f)
	if !math.IsNaN(f) && !math.IsInf(f, 0) && writtenWithoutFraction(f) {
		n += 2 // ".0"
	}
	return n
}

// jsonFloatSize is the size of f as encoding/json writes it. A value JSON
// cannot hold (NaN, ±Inf) never reaches the encoder: columnValue returns
// it as text.
func jsonFloatSize(f float64) int {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return len(strconv.FormatFloat(f, 'g', -1, 64)) + 2
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes 1e-07 as 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			return n - 1
		}
	}
	return len(b)
}
