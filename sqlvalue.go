package projectdata

import (
	"math"
	"strconv"

	"github.com/ncruces/go-sqlite3"
)

// sqlValue is a checked value as an insert binds it and logs it: NULL,
// INTEGER, REAL or TEXT, held without an interface, so that the values of
// a large insert cost no allocation each.
type sqlValue struct {
	s    string // TEXT
	n    int64  // INTEGER, or the bits of a REAL
	kind sqlKind
}

// sqlKind is the storage class of a sqlValue.
type sqlKind uint8

const (
	sqlNull sqlKind = iota
	sqlInt
	sqlReal
	sqlText
)

func intValue(n int64) sqlValue    { return sqlValue{n: n, kind: sqlInt} }
func realValue(f float64) sqlValue { return sqlValue{n: int64(math.Float64bits(f)), kind: sqlReal} }
func textValue(s string) sqlValue  { return sqlValue{s: s, kind: sqlText} }
func (v sqlValue) float() float64  { return math.Float64frombits(uint64(v.n)) }
func (v sqlValue) isNull() bool    { return v.kind == sqlNull }

// sqlValueOf holds a converted value (nil, int64, float64 or string, as
// colType.convert returns them).
func sqlValueOf(v any) sqlValue {
	switch v := v.(type) {
	case int64:
		return intValue(v)
	case float64:
		return realValue(v)
	case string:
		return textValue(v)
	}
	return sqlValue{}
}

// any returns the value as convert returns it.
func (v sqlValue) any() any {
	switch v.kind {
	case sqlInt:
		return v.n
	case sqlReal:
		return v.float()
	case sqlText:
		return v.s
	}
	return nil
}

// anys returns vals as convert returns them.
func anys(vals []sqlValue) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v.any()
	}
	return out
}

// bindValues binds vals to the parameters of st, from the first.
func bindValues(st *sqlite3.Stmt, vals []sqlValue) error {
	for i, v := range vals {
		var err error
		switch v.kind {
		case sqlInt:
			err = st.BindInt64(i+1, v.n)
		case sqlReal:
			err = st.BindFloat(i+1, v.float())
		case sqlText:
			err = st.BindText(i+1, v.s)
		default:
			err = st.BindNull(i + 1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// appendSQLValue is appendJSONValue for a sqlValue, without boxing it.
func appendSQLValue(b []byte, v sqlValue) []byte {
	switch v.kind {
	case sqlInt:
		return strconv.AppendInt(b, v.n, 10)
	case sqlReal:
		return appendImageFloat(b, v.float())
	case sqlText:
		return appendHTMLSafeString(b, v.s)
	}
	return append(b, "null"...)
}
