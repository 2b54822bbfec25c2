package projectdata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ColumnType is the name of a column's type, one of the Type constants.
// Input is case-insensitive; types are returned upper case. It is a
// string (CONTRACT §1 fixes ColumnDef.Type as one), so that a type read
// from input needs no conversion.
type ColumnType = string

// colType is a column's type, normalized (parseColumnType), with the
// rules of the values that fit it.
type colType string

// The Type constants are untyped, so that each is a ColumnType and a
// colType alike.

// The column types, the values of ColumnDef.Type and Column.Type.
const (
	TypeText     = "TEXT"
	TypeInteger  = "INTEGER"
	TypeReal     = "REAL"
	TypeNumeric  = "NUMERIC"
	TypeBoolean  = "BOOLEAN"  // stored 0/1; accepts true/false/0/1
	TypeDatetime = "DATETIME" // ISO 8601 in, stored and returned as RFC 3339 UTC to the millisecond
)

// parseColumnType normalizes a type name; empty means TEXT.
func parseColumnType(s string) (colType, error) {
	if s == "" {
		return TypeText, nil
	}
	switch t := colType(strings.ToUpper(s)); t {
	case TypeText, TypeInteger, TypeReal, TypeNumeric, TypeBoolean, TypeDatetime:
		return t, nil
	}
	return "", errorf(ErrInvalidColumnType, "column type %.40q must be one of TEXT, INTEGER, REAL, NUMERIC, BOOLEAN, DATETIME", s)
}

// datetimeLayouts are the ISO 8601 forms a DATETIME column accepts, as
// isoExtended writes them; a form without an offset is UTC. Whatever the
// form, the column stores the instant in the service's one timestamp form
// (timeLayout), so that text order is time order. (A fraction of a second
// after the seconds parses without a layout of its own.)
var datetimeLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// isoExtended rewrites the ISO 8601 forms of a date and time that
// datetimeLayouts lack into the extended form they parse: a lower case t
// or z (RFC 3339 allows them), a space between date and time, the basic
// form (20260102T030405Z), and an offset of ±hh or ±hhmm (±hh:mm). What
// is none of these comes back as it was, for the layouts to refuse.
func isoExtended(s string) string {
	if len(s) > 48 {
		return s
	}
	var buf, basic [64]byte
	b := append(buf[:0], s...)
	for i, c := range b {
		switch c {
		case 't':
			b[i] = 'T'
		case 'z':
			b[i] = 'Z'
		}
	}
	if digitsAt(b, 0) == 8 && (len(b) == 8 || b[8] == 'T') { // the basic form
		ext := append(append(append(basic[:0], b[:4]...), '-'), b[4:6]...)
		ext = append(append(ext, '-'), b[6:8]...)
		if len(b) > 8 {
			switch digitsAt(b, 9) {
			case 4:
				ext = append(append(append(ext, b[8:11]...), ':'), b[11:]...)
			case 6:
				ext = append(append(append(append(append(ext, b[8:11]...), ':'), b[11:13]...), ':'), b[13:]...)
			default:
				return s
			}
		}
		b = ext
	} else if len(b) > 10 && b[10] == ' ' {
		b[10] = 'T'
	}
	if len(b) > len("2006-01-02T15:04") && b[10] == 'T' {
		if i := bytes.LastIndexAny(b[11:], "+-") + 11; i > 11 {
			switch n := digitsAt(b, i+1); {
			case n == 2 && len(b) == i+3:
				b = append(b, ":00"...)
			case n == 4 && len(b) == i+5:
				b = append(b[:i+3], ':', b[i+3], b[i+4])
			}
		}
	}
	if string(b) == s { // the usual case: no copy made
		return s
	}
	return string(b)
}

// digitsAt counts the ASCII digits of b from i on.
func digitsAt(b []byte, i int) int {
	n := 0
	for i+n < len(b) && isDigit(b[i+n]) {
		n++
	}
	return n
}

// convert checks that v fits a column of type t and returns the value to
// bind: nil, int64, float64 or string. v is a JSON-decoded value (decoded
// with UseNumber) or a Go scalar: a bool, string, any integer or float
// kind (named types too) or a time.Time. Only lossless conversions are
// made: a number a REAL or NUMERIC column would round, an integer out of
// int64's range, a time finer than a millisecond are refused.
func (t colType) convert(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any, []any:
		return nil, errNoColumnValue("a nested object or array")
	case bool:
		switch t {
		case TypeBoolean:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case TypeText:
			return strconv.FormatBool(x), nil
		}
		return nil, errValue(t, strconv.FormatBool(x))
	case json.Number:
		return t.convertNumber(string(x), false)
	case string:
		return t.convertString(x)
	case int:
		return t.convertInt(int64(x))
	case int64:
		return t.convertInt(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errNoColumnValue("a non-finite number")
		}
		return t.convertNumber(strconv.FormatFloat(x, 'g', -1, 64), false)
	case time.Time:
		switch t {
		case TypeDatetime:
			return t.convertTime(x, x.Format(time.RFC3339Nano))
		case TypeText:
			return x.UTC().Format(time.RFC3339Nano), nil
		}
		return nil, errValue(t, "a time")
	}
	return t.convertKind(reflect.ValueOf(v))
}

// CheckValue returns the error a Store gives a value of a row (in Insert,
// UpdateRecord or UpdateRecords) that no column takes: a nested object or
// array, a Go value of a kind it does not take (a []byte, a pointer, a
// struct, an array), a NaN or an infinity, an unsigned integer past int64,
// or text that is not valid UTF-8 or holds a NUL. It returns nil for every
// other value, whether or not it fits a given column. The Go client checks
// the rows it sends with it, as it checks query parameters with
// CheckQueryParam: JSON would carry some of these values as others the
// server takes (a []byte as base64 text, a pointer as its target, a UUID as
// its text, invalid UTF-8 as U+FFFD).
func CheckValue(v any) error {
	// A TEXT column takes every value some column takes.
	_, err := colType(TypeText).convert(v)
	return err
}

// convertKind converts the Go scalars convert has no case for by their
// kind: every int and uint width, float32, and named types of them, of
// string and of bool.
func (t colType) convertKind(v reflect.Value) (any, error) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return t.convertInt(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > math.MaxInt64 {
			return nil, errNoColumnValue(fmt.Sprintf("%d (it overflows the 64-bit signed integers SQLite stores)", u))
		}
		return t.convertInt(int64(u))
	case reflect.Float32, reflect.Float64:
		return t.convert(v.Float())
	case reflect.String:
		return t.convertString(v.String())
	case reflect.Bool:
		return t.convert(v.Bool())
	}
	return nil, errNoColumnValue("a value of an unsupported kind")
}

// convertTime returns an instant in the service's one timestamp form,
// refusing what it cannot hold exactly; shown is how the caller wrote it.
func (t colType) convertTime(x time.Time, shown string) (any, error) {
	if x.Nanosecond()%int(time.Millisecond) != 0 {
		return nil, errorf(ErrInvalidColumnValue, "%s is finer than the millisecond a DATETIME column holds", strconv.Quote(truncate(shown)))
	}
	if y := x.UTC().Year(); y < 0 || y > 9999 {
		return nil, errValue(t, strconv.Quote(truncate(shown)))
	}
	return formatTime(x), nil
}

func (t colType) convertInt(n int64) (any, error) {
	switch t {
	case TypeInteger, TypeNumeric:
		return n, nil
	case TypeReal:
		if f, ok := floatOfInt(n); ok {
			return f, nil
		}
		return nil, errorf(ErrInvalidColumnValue, "%d would lose digits in a REAL column", n)
	case TypeText:
		return strconv.FormatInt(n, 10), nil
	case TypeBoolean:
		if n == 0 || n == 1 {
			return n, nil
		}
	}
	return nil, errValue(t, strconv.FormatInt(n, 10))
}

// convertNumber converts the text of a number: a JSON number, or text
// that holds one (quoted), which an error shows as text. The error's text
// is made only on error: a key in a request's path is quoted text.
func (t colType) convertNumber(num string, quoted bool) (any, error) {
	switch t {
	case TypeText:
		return num, nil
	case TypeReal:
		return t.convertFloat(num, quoted)
	case TypeInteger, TypeBoolean:
		n, ok := exactInt(num)
		if !ok || (t == TypeBoolean && n != 0 && n != 1) {
			return nil, errValue(t, shownNumber(num, quoted))
		}
		return n, nil
	case TypeNumeric:
		if n, ok := exactInt(num); ok {
			return n, nil
		}
		return t.convertFloat(num, quoted)
	}
	return nil, errValue(t, shownNumber(num, quoted))
}

// convertFloat converts a number a float64 holds exactly (see exactFloat).
func (t colType) convertFloat(num string, quoted bool) (any, error) {
	if f, ok := exactFloat(num); ok {
		return f, nil
	}
	if _, err := strconv.ParseFloat(num, 64); err == nil {
		return nil, errorf(ErrInvalidColumnValue, "%s would lose digits in a %s column", shownNumber(num, quoted), t)
	}
	return nil, errValue(t, shownNumber(num, quoted))
}

// shownNumber is how an error shows the text of a number (see
// convertNumber).
func shownNumber(num string, quoted bool) string {
	if quoted {
		return strconv.Quote(truncate(num))
	}
	return num
}

// convertString converts text, which numeric columns accept when it is a
// number written out ("42").
func (t colType) convertString(s string) (any, error) {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return nil, errNoColumnValue("text that is not valid UTF-8 or holds a NUL")
	}
	switch t {
	case TypeText:
		return s, nil
	case TypeDatetime:
		iso := isoExtended(s)
		for _, layout := range datetimeLayouts {
			if x, err := time.Parse(layout, iso); err == nil && iso8601Strict(iso) {
				return t.convertTime(x, s)
			}
		}
		return nil, errValue(t, strconv.Quote(truncate(s)))
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true", "1":
			return int64(1), nil
		case "false", "0":
			return int64(0), nil
		}
		return nil, errValue(t, strconv.Quote(truncate(s)))
	}
	if !isJSONNumber(s) {
		return nil, errValue(t, strconv.Quote(truncate(s)))
	}
	return t.convertNumber(s, true)
}

// iso8601Strict reports whether s, which time.Parse took with one of
// datetimeLayouts, also keeps to ISO 8601 where Go's parser is lenient: an
// hour of two digits (Go takes "T1:00"), an offset's hours below 24 and its
// minutes below 60 (Go takes "+24:00" and "+00:60", an offset of an hour).
func iso8601Strict(s string) bool {
	if len(s) > len("2006-01-02") && (len(s) < 13 || !isDigit(s[11]) || !isDigit(s[12])) {
		return false
	}
	// A '+' or '-' six bytes from the end is an offset's sign: the date's
	// hyphens are further from the end of a string this long.
	if n := len(s); n > len("2006-01-02T15:04") && (s[n-6] == '+' || s[n-6] == '-') {
		return s[n-5:n-3] <= "23" && s[n-2:] <= "59"
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isJSONNumber reports whether s is a number in JSON's syntax.
func isJSONNumber(s string) bool {
	return s != "" && json.Valid([]byte(s)) && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// truncate shortens a value quoted in a message to 40 bytes.
func truncate(s string) string { return truncateTo(s, 40) }

// truncateTo shortens s to at most max bytes and an ellipsis, on a rune
// boundary.
func truncateTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func errValue(t colType, what string) error {
	return errorf(ErrInvalidColumnValue, "%s does not fit column type %s", what, t)
}

// errNoColumnValue refuses a value that no column type takes (see
// CheckValue).
func errNoColumnValue(what string) error {
	return errorf(ErrInvalidColumnValue, "%s fits no column type", what)
}

// sqlLiteral renders a converted value (nil, int64, float64 or string) as
// an SQL literal, for the one place SQL cannot bind values: a column's
// DEFAULT clause.
func sqlLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	}
	panic("sqlLiteral: unconverted value")
}
