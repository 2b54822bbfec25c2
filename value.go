package projectdata

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ColumnType is the type of a column. Input is case-insensitive; types are
// returned upper case.
type ColumnType string

// The column types.
const (
	TypeText     ColumnType = "TEXT"
	TypeInteger  ColumnType = "INTEGER"
	TypeReal     ColumnType = "REAL"
	TypeNumeric  ColumnType = "NUMERIC"
	TypeBoolean  ColumnType = "BOOLEAN"  // stored 0/1; accepts true/false/0/1
	TypeDatetime ColumnType = "DATETIME" // ISO 8601 text, validated
)

// parseColumnType normalizes a type name; empty means TEXT.
func parseColumnType(s string) (ColumnType, error) {
	if s == "" {
		return TypeText, nil
	}
	switch t := ColumnType(strings.ToUpper(s)); t {
	case TypeText, TypeInteger, TypeReal, TypeNumeric, TypeBoolean, TypeDatetime:
		return t, nil
	}
	return "", errorf(ErrInvalidColumnType, "column type %.40q must be one of TEXT, INTEGER, REAL, NUMERIC, BOOLEAN, DATETIME", s)
}

// datetimeLayouts are the ISO 8601 forms a DATETIME column accepts.
var datetimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
}

// convert checks that v fits a column of type t and returns the value to
// bind: nil, int64, float64 or string. v is a JSON-decoded value (decoded
// with UseNumber) or a plain Go scalar. Only lossless conversions are made.
func (t ColumnType) convert(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any, []any:
		return nil, errValue(t, "a nested object or array")
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
		return t.convertNumber(string(x), x.String())
	case string:
		return t.convertString(x)
	case int:
		return t.convertInt(int64(x))
	case int64:
		return t.convertInt(x)
	case int32:
		return t.convertInt(int64(x))
	case uint32:
		return t.convertInt(int64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errValue(t, "a non-finite number")
		}
		return t.convertNumber(strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatFloat(x, 'g', -1, 64))
	case float32:
		return t.convert(float64(x))
	case time.Time:
		if t == TypeDatetime || t == TypeText {
			return x.UTC().Format(time.RFC3339Nano), nil
		}
	}
	return nil, errValue(t, "a value of an unsupported kind")
}

func (t ColumnType) convertInt(n int64) (any, error) {
	switch t {
	case TypeInteger, TypeNumeric:
		return n, nil
	case TypeReal:
		return float64(n), nil
	case TypeText:
		return strconv.FormatInt(n, 10), nil
	case TypeBoolean:
		if n == 0 || n == 1 {
			return n, nil
		}
	}
	return nil, errValue(t, strconv.FormatInt(n, 10))
}

// convertNumber converts the text of a JSON number.
func (t ColumnType) convertNumber(num, shown string) (any, error) {
	switch t {
	case TypeText:
		return num, nil
	case TypeReal:
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return nil, errValue(t, shown)
		}
		return f, nil
	case TypeInteger, TypeBoolean:
		n, ok := exactInt(num)
		if !ok || (t == TypeBoolean && n != 0 && n != 1) {
			return nil, errValue(t, shown)
		}
		return n, nil
	case TypeNumeric:
		if n, ok := exactInt(num); ok {
			return n, nil
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return nil, errValue(t, shown)
		}
		return f, nil
	}
	return nil, errValue(t, shown)
}

// convertString converts text, which numeric columns accept when it is a
// number written out ("42").
func (t ColumnType) convertString(s string) (any, error) {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return nil, errValue(t, "text that is not valid UTF-8 or holds a NUL")
	}
	switch t {
	case TypeText:
		return s, nil
	case TypeDatetime:
		for _, layout := range datetimeLayouts {
			if _, err := time.Parse(layout, s); err == nil {
				return s, nil
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
	return t.convertNumber(s, strconv.Quote(truncate(s)))
}

// exactInt parses a number that is an integer in int64 range, also when
// written with a fraction or exponent (2.0, 1e3).
func exactInt(num string) (int64, bool) {
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		return n, true
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// isJSONNumber reports whether s is a number in JSON's syntax.
func isJSONNumber(s string) bool {
	return s != "" && json.Valid([]byte(s)) && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func errValue(t ColumnType, what string) error {
	return errorf(ErrInvalidColumnValue, "%s does not fit column type %s", what, t)
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
