package projectdata

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/pkg/errors"
)

// Condition is one condition of a where clause: Column Op Value.
//
// Op is one of (the WhereOp constants)
//
//	=  !=  <  <=  >  >=            Value: a scalar
//	like                           Value: a text pattern
//	in  not_in                     Value: a non-empty list of non-null scalars
//	is_null  is_not_null           no Value
//
// A nil Value with = matches NULL (as is_null does) and with != matches
// every non-NULL value (as is_not_null does); the other comparisons need a
// non-null Value. like is SQLite's LIKE: % and _ are wildcards, ASCII
// letters match case-insensitively. As in SQL, a NULL column value matches
// no comparison, != and not_in included: only is_null (or = with a nil
// Value) selects it.
//
// Values are checked against the column's type as inserted values are,
// and compared in that type ("42" is 42 in an INTEGER column, true is 1 in
// a BOOLEAN one, a DATETIME in its stored form); a value that does not fit
// ("abc" for an INTEGER column) is ErrInvalidColumnValue. like takes a
// text pattern (a string, of a named string type too) whatever the
// column; in and not_in take a list (a []any from JSON, or any Go slice
// such as []int or []string) of at most MaxWhereList values. Values are
// always bound parameters, never SQL text.
type Condition struct {
	Column string  `json:"column"`
	Op     WhereOp `json:"op"`
	Value  any     `json:"value,omitempty"`
}

// WhereOp is the operator of a Condition; input is case-insensitive.
type WhereOp string

// The operators of a Condition.
const (
	WhereEq        WhereOp = "="
	WhereNe        WhereOp = "!="
	WhereLt        WhereOp = "<"
	WhereLe        WhereOp = "<="
	WhereGt        WhereOp = ">"
	WhereGe        WhereOp = ">="
	WhereLike      WhereOp = "like"
	WhereIn        WhereOp = "in"
	WhereNotIn     WhereOp = "not_in"
	WhereIsNull    WhereOp = "is_null"
	WhereIsNotNull WhereOp = "is_not_null"
)

// MaxWhereList bounds the values of the in and not_in lists of a Where, in
// one list and in all of them: SQLite binds at most 32,766 parameters to a
// statement.
const MaxWhereList = 10000

// MaxLikePattern bounds a like pattern, in bytes, in a Where and in a
// query (SQLite's limit of every connection). SQLite matches a pattern
// recursively, a level for each wildcard followed by other characters: a
// pattern of some 9,000 bytes overflows its stack, which leaves the
// connection unusable. It is not an Option: a larger one is not safe.
const MaxLikePattern = 4000

// Where selects the rows of a bulk update or delete: every condition must
// match. An empty Where selects nothing by itself: the bulk operations then
// need allow_all (see BulkUpdate).
//
// From JSON, Where takes both forms of the contract: an object of column
// name to value (equality; {"col": null} matches NULL), or an array of
// {column, op, value} objects. Numbers stay exact (json.Number). A
// condition that is not such an object, has unknown fields or lacks the
// value its operator needs is ErrInvalidWhere.
type Where []Condition

// maxWhereConditions bounds the conditions of a Where: more would outgrow
// SQLite's expression depth (they are joined by AND).
const maxWhereConditions = 256

// UnmarshalJSON decodes the object or the array form; null is an empty
// Where. It reads the conditions as a stream and refuses the first one too
// many.
func (w *Where) UnmarshalJSON(b []byte) error {
	js := newJSONBytes(b)
	tok, err := js.token()
	if err != nil {
		return errorf(ErrInvalidWhere, "where must be an object or an array of conditions")
	}
	out := Where{}
	tooMany := func() error {
		if len(out) > maxWhereConditions {
			return errorf(ErrInvalidWhere, "where takes at most %d conditions", maxWhereConditions)
		}
		return nil
	}
	switch tok {
	case nil:
		*w = nil
		return nil
	case json.Delim('{'):
		err = js.fields(func(key string) error {
			v, err := js.scalar()
			if err == errNotScalar {
				v, err = js.scalarList(len(out))
			}
			if err != nil {
				return err
			}
			out = append(out, Condition{Column: key, Op: "=", Value: v})
			return tooMany()
		})
	case json.Delim('['):
		err = js.array(func(i int) error {
			c, err := js.condition(i)
			if err != nil {
				return err
			}
			out = append(out, c)
			return tooMany()
		})
	default:
		return errorf(ErrInvalidWhere, "where must be an object or an array of conditions")
	}
	if err != nil {
		if ErrorCode(err) == ErrInvalidJSON {
			return errorf(ErrInvalidWhere, "where is not valid JSON")
		}
		return err
	}
	*w = out
	return nil
}

// condition reads the array form's condition i: {column, op, value}, the
// value a scalar or an array of scalars.
func (js *jsonStream) condition(i int) (Condition, error) {
	var (
		c        Condition
		hasValue bool
	)
	wrongType := func(name string) error {
		return errorf(ErrInvalidWhere, "where condition %d: field %q has the wrong type", i, name)
	}
	notObject := errorf(ErrInvalidWhere, "where condition %d must be an object {column, op, value}", i)
	err := js.object(notObject, func(name string) error {
		switch name {
		case "column", "op":
			v, err := js.scalar()
			s, ok := v.(string)
			if err != nil || !ok {
				return wrongType(name)
			}
			if name == "column" {
				c.Column = s
			} else {
				c.Op = WhereOp(s)
			}
		case "value":
			hasValue = true
			v, err := js.scalar()
			if err == errNotScalar {
				v, err = js.scalarList(i)
			}
			if err != nil {
				return err
			}
			c.Value = v
		default:
			return errorf(ErrInvalidWhere, "where condition %d: unknown field %.40q (fields: column, op, value)", i, name)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	if c.Column == "" || c.Op == "" {
		return c, errorf(ErrInvalidWhere, "where condition %d needs a column and an op", i)
	}
	if !hasValue && !whereOps[WhereOp(strings.ToLower(string(c.Op)))].noValue {
		return c, errorf(ErrInvalidWhere, "where condition %d: op %.20q needs a value", i, c.Op)
	}
	return c, nil
}

// scalarList reads the rest of a value that scalar found to be a
// container: an array of at most MaxWhereList scalars.
func (js *jsonStream) scalarList(i int) ([]any, error) {
	bad := errorf(ErrInvalidWhere, "where condition %d: the value must be a scalar or an array of scalars", i)
	// scalar consumed the opening delimiter; an object is refused here.
	list := []any{}
	if js.lastDelim != '[' {
		return nil, bad
	}
	err := js.array(func(int) error {
		v, err := js.scalar()
		if err == errNotScalar {
			return bad
		}
		list = append(list, v)
		if len(list) > MaxWhereList {
			return errorf(ErrInvalidWhere, "where condition %d: a list takes at most %d values", i, MaxWhereList)
		}
		return err
	})
	return list, err
}

// whereOp is how an operator becomes SQL.
type whereOp struct {
	sql     string // the operator between the column and its parameter(s)
	list    bool   // the value is a list, bound as one parameter per value
	text    bool   // the value is text, whatever the column (a pattern)
	noValue bool   // the operator takes no value
}

// whereOps are the operators of a Condition, by lower-case name.
var whereOps = map[WhereOp]whereOp{
	WhereEq:        {sql: " = ?"},
	WhereNe:        {sql: " != ?"},
	WhereLt:        {sql: " < ?"},
	WhereLe:        {sql: " <= ?"},
	WhereGt:        {sql: " > ?"},
	WhereGe:        {sql: " >= ?"},
	WhereLike:      {sql: " LIKE ?", text: true},
	WhereIn:        {sql: " IN (", list: true},
	WhereNotIn:     {sql: " NOT IN (", list: true},
	WhereIsNull:    {sql: " IS NULL", noValue: true},
	WhereIsNotNull: {sql: " IS NOT NULL", noValue: true},
}

// appendSQL checks w against t and appends its WHERE clause to sql (nothing
// when w is empty) and its bound values to args. Only column names from
// the registry, quoted, operators from whereOps and parameters reach the
// SQL text.
func (w Where) appendSQL(t *tableInfo, sql *strings.Builder, args []any) ([]any, error) {
	if len(w) > maxWhereConditions {
		return nil, errorf(ErrInvalidWhere, "where takes at most %d conditions", maxWhereConditions)
	}
	listed := 0 // values in the lists so far
	for i, c := range w {
		col, err := t.columnNamed(c.Column)
		if err != nil {
			return nil, err
		}
		opName := WhereOp(strings.ToLower(string(c.Op)))
		op, ok := whereOps[opName]
		if !ok {
			return nil, errorf(ErrInvalidWhere, "where condition %d: unknown op %.20q (ops: =, !=, <, <=, >, >=, like, in, not_in, is_null, is_not_null)", i, c.Op)
		}
		params := 0
		switch {
		case op.noValue && c.Value != nil:
			return nil, errorf(ErrInvalidWhere, "where condition %d: op %s takes no value", i, opName)
		case c.Value == nil && opName == WhereEq:
			op = whereOps[WhereIsNull]
		case c.Value == nil && opName == WhereNe:
			op = whereOps[WhereIsNotNull]
		case c.Value == nil && !op.noValue:
			return nil, errorf(ErrInvalidWhere, "where condition %d: op %s needs a non-null value", i, opName)
		case op.noValue:
		case op.list:
			if args, params, err = appendList(col, c.Value, args); err != nil {
				return nil, errors.WithMessagef(err, "where condition %d", i)
			}
			if listed += reflect.ValueOf(c.Value).Len(); listed > MaxWhereList {
				return nil, errorf(ErrInvalidWhere, "where condition %d: the lists of the where hold more than %d values in all", i, MaxWhereList)
			}
		case op.text:
			pattern, ok := textPattern(c.Value)
			if !ok {
				return nil, errorf(ErrInvalidWhere, "where condition %d: op %s takes a text pattern", i, opName)
			}
			if len(pattern) > MaxLikePattern {
				return nil, errorf(ErrInvalidWhere, "where condition %d: the pattern is %d bytes; at most %d are allowed", i, len(pattern), MaxLikePattern)
			}
			args = append(args, pattern)
		default:
			v, err := whereValue(col, c.Value)
			if err != nil {
				return nil, errors.WithMessagef(err, "where condition %d", i)
			}
			args = append(args, v)
		}
		if i == 0 {
			sql.WriteString(" WHERE ")
		} else {
			sql.WriteString(" AND ")
		}
		sql.WriteString(col.quoted)
		sql.WriteString(op.sql)
		if op.list {
			sql.WriteString("?")
			sql.WriteString(strings.Repeat(", ?", params-1))
			sql.WriteString(")")
		}
	}
	return args, nil
}

// textPattern is v as a like pattern: text, of string or a named string
// type, as a value compared with = may be (a json.Number is a number).
func textPattern(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return "", false
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// whereValue converts a scalar compared with col to the column's type, as
// an inserted value is converted.
func whereValue(col *columnInfo, v any) (any, error) {
	switch v.(type) {
	case map[string]any, []any:
		return nil, errorf(ErrInvalidWhere, "the value for column %q must be a scalar", col.Name)
	}
	x, err := colType(col.Type).convert(v)
	if err != nil {
		return nil, errors.WithMessagef(err, "column %q", col.Name)
	}
	return x, nil
}

// appendList converts the values of in or not_in and appends them to args
// as parameters: as many as the values, rounded up to a power of two by
// repeating the last value (which changes neither in nor not_in), so that
// lists of similar lengths share a statement. It returns the number of
// parameters. No table-valued function is involved, so no table can
// shadow one.
func appendList(col *columnInfo, v any, args []any) ([]any, int, error) {
	items := reflect.ValueOf(v)
	if _, isBytes := v.([]byte); isBytes || items.Kind() != reflect.Slice || items.Len() == 0 {
		return nil, 0, errorf(ErrInvalidWhere, "the value for column %q must be a non-empty array of scalars", col.Name)
	}
	n := items.Len()
	if n > MaxWhereList {
		return nil, 0, errorf(ErrInvalidWhere, "the list for column %q has %d values; at most %d are allowed", col.Name, n, MaxWhereList)
	}
	var last any
	for i := range n {
		item := items.Index(i).Interface()
		if item == nil {
			return nil, 0, errorf(ErrInvalidWhere, "the values for column %q must not be null (use is_null)", col.Name)
		}
		x, err := whereValue(col, item)
		if err != nil {
			return nil, 0, errors.WithMessagef(err, "value %d", i)
		}
		args = append(args, x)
		last = x
	}
	params := listParams(n)
	for range params - n {
		args = append(args, last)
	}
	return args, params, nil
}

// listParams is the number of parameters for a list of n values: n rounded
// up to a power of two, up to 1,024; longer lists are bound as they are.
func listParams(n int) int {
	if n > 1024 {
		return n
	}
	p := 1
	for p < n {
		p *= 2
	}
	return p
}
