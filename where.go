package projectdata

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Condition is one condition of a where clause: Column Op Value.
//
// Op is one of
//
//	=  !=  <  <=  >  >=  like      Value: a scalar
//	in  not_in                     Value: a non-empty []any of non-null scalars
//	is_null  is_not_null           no Value
//
// A nil Value with = matches NULL (as is_null does) and with != matches
// every non-NULL value (as is_not_null does); the other comparisons need a
// non-null Value. like is SQLite's LIKE: % and _ are wildcards, ASCII
// letters match case-insensitively. As in SQL, a NULL column value matches
// no comparison, != and not_in included: only is_null (or = with a nil
// Value) selects it.
//
// A value that fits the column's type is compared in that type ("42" is 42
// in an INTEGER column, true is 1 in a BOOLEAN one); any other scalar is
// compared as it is, so it matches nothing it should not. Values are always
// bound parameters, never SQL text.
type Condition struct {
	Column string `json:"column"`
	Op     string `json:"op"`
	Value  any    `json:"value,omitempty"`
}

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

// Where bounds: more conditions than maxWhereConditions would outgrow
// SQLite's expression depth (they are joined by AND), and an in or not_in
// list holds at most maxWhereListValues values.
const (
	maxWhereConditions = 256
	maxWhereListValues = 10000
)

// UnmarshalJSON decodes the object or the array form; null is an empty
// Where. It reads the conditions as a stream and refuses the first one too
// many.
func (w *Where) UnmarshalJSON(b []byte) error {
	js := newJSONStream(bytes.NewReader(b))
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
				c.Op = s
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
	if !hasValue && !whereOps[strings.ToLower(c.Op)].noValue {
		return c, errorf(ErrInvalidWhere, "where condition %d: op %.20q needs a value", i, c.Op)
	}
	return c, nil
}

// scalarList reads the rest of a value that scalar found to be a
// container: an array of at most maxWhereListValues scalars.
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
		if len(list) > maxWhereListValues {
			return errorf(ErrInvalidWhere, "where condition %d: a list takes at most %d values", i, maxWhereListValues)
		}
		return err
	})
	return list, err
}

// whereOp is how an operator becomes SQL.
type whereOp struct {
	sql     string // the operator between the column and the parameter
	list    bool   // the value is a list, bound as one JSON array
	noValue bool   // the operator takes no value
}

// whereOps are the operators of a Condition, by lower-case name.
var whereOps = map[string]whereOp{
	"=":           {sql: " = ?"},
	"!=":          {sql: " != ?"},
	"<":           {sql: " < ?"},
	"<=":          {sql: " <= ?"},
	">":           {sql: " > ?"},
	">=":          {sql: " >= ?"},
	"like":        {sql: " LIKE ?"},
	"in":          {sql: " IN (SELECT value FROM json_each(?))", list: true},
	"not_in":      {sql: " NOT IN (SELECT value FROM json_each(?))", list: true},
	"is_null":     {sql: " IS NULL", noValue: true},
	"is_not_null": {sql: " IS NOT NULL", noValue: true},
}

// appendSQL checks w against t and appends its WHERE clause to sql (nothing
// when w is empty) and its bound values to args. Only column names from
// the registry, quoted, and operators from whereOps reach the SQL text, so
// one shape of condition always gives the same statement.
func (w Where) appendSQL(t *tableInfo, sql *strings.Builder, args []any) ([]any, error) {
	if len(w) > maxWhereConditions {
		return nil, errorf(ErrInvalidWhere, "where takes at most %d conditions", maxWhereConditions)
	}
	for i, c := range w {
		col, err := t.columnNamed(c.Column)
		if err != nil {
			return nil, err
		}
		opName := strings.ToLower(c.Op)
		op, ok := whereOps[opName]
		if !ok {
			return nil, errorf(ErrInvalidWhere, "where condition %d: unknown op %.20q (ops: =, !=, <, <=, >, >=, like, in, not_in, is_null, is_not_null)", i, c.Op)
		}
		switch {
		case op.noValue && c.Value != nil:
			return nil, errorf(ErrInvalidWhere, "where condition %d: op %s takes no value", i, opName)
		case c.Value == nil && opName == "=":
			op = whereOps["is_null"]
		case c.Value == nil && opName == "!=":
			op = whereOps["is_not_null"]
		case c.Value == nil && !op.noValue:
			return nil, errorf(ErrInvalidWhere, "where condition %d: op %s needs a non-null value", i, opName)
		case op.list:
			list, err := whereList(col, c.Value)
			if err != nil {
				return nil, errorf(ErrInvalidWhere, "where condition %d: %s", i, err)
			}
			args = append(args, list)
		case !op.noValue:
			v, err := whereValue(col, c.Value)
			if err != nil {
				return nil, errorf(ErrInvalidWhere, "where condition %d: %s", i, err)
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
	}
	return args, nil
}

// whereValue returns the value to bind for a scalar compared with col: in
// the column's type when it fits, else as it is (a number as int64 or
// float64, a boolean as 0/1, text as text).
func whereValue(col *columnInfo, v any) (any, error) {
	switch v.(type) {
	case map[string]any, []any:
		return nil, errorf(ErrInvalidWhere, "the value for column %q must be a scalar", col.Name)
	}
	if x, err := col.Type.convert(v); err == nil {
		return x, nil
	}
	var (
		x   any
		err error
	)
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		x, err = TypeBoolean.convert(v)
	default:
		x, err = TypeNumeric.convert(v)
	}
	if err != nil {
		return nil, errorf(ErrInvalidWhere, "the value for column %q must be a scalar", col.Name)
	}
	return x, nil
}

// maxInValues bounds the values of one in or not_in condition (CONTRACT §11).
const maxInValues = 10000

// whereList returns the JSON array to bind for the values of in or not_in:
// one parameter, whatever the number of values, so the statement is the
// same for every list.
func whereList(col *columnInfo, v any) (string, error) {
	items, ok := v.([]any)
	if !ok || len(items) == 0 {
		return "", errorf(ErrInvalidWhere, "the value for column %q must be a non-empty array of scalars", col.Name)
	}
	if len(items) > maxInValues {
		return "", errorf(ErrInvalidWhere, "the values for column %q are %d; in and not_in take at most %d", col.Name, len(items), maxInValues)
	}
	vals := make([]any, len(items))
	for i, item := range items {
		if item == nil {
			return "", errorf(ErrInvalidWhere, "the values for column %q must not be null (use is_null)", col.Name)
		}
		x, err := whereValue(col, item)
		if err != nil {
			return "", err
		}
		vals[i] = x
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return "", errorf(ErrInvalidWhere, "the values for column %q cannot be encoded", col.Name)
	}
	return string(b), nil
}
