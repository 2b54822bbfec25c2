package projectdata

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// maxQueryParams is SQLite's limit on the parameters of one statement.
const maxQueryParams = 32766

// jsonStream is the one JSON decoder of request bodies. It reads a stream
// and keeps numbers exact (json.Number). Bodies that hold lists (insert
// rows, query params, where conditions) are read token by token, so a list
// that is too long is refused as soon as it is, never after decoding all of
// it; nested values where a scalar belongs are refused before they are
// built.
type jsonStream struct {
	d         *json.Decoder
	lastDelim json.Delim // the container scalar found instead of a scalar
}

func newJSONStream(r io.Reader) *jsonStream {
	d := json.NewDecoder(r)
	d.UseNumber()
	return &jsonStream{d: d}
}

// jsonStreamer is a body type that decodes itself from the stream.
type jsonStreamer interface {
	decodeJSONStream(js *jsonStream) error
}

// DecodeJSON decodes one JSON request body from r into v. Numbers stay
// exact (json.Number), unknown object fields and trailing data are
// refused. Body types of this package that hold lists (QueryRequest) are
// read as a stream and refused as soon as they are known to be too large.
// An empty body (nothing but white space) leaves v as it is and returns
// false.
//
// Errors: ErrInvalidJSON (bad syntax, trailing data), ErrInvalidRequest (a
// value of the wrong shape, an unknown field, too many params), the codes
// of the body's own checks (ErrInvalidWhere), and any error r returns.
func DecodeJSON(r io.Reader, v any) (bool, error) {
	br := bufio.NewReader(r)
	if empty, err := onlySpace(br); empty || err != nil {
		return false, err
	}
	js := newJSONStream(br)
	var err error
	if s, ok := v.(jsonStreamer); ok {
		err = s.decodeJSONStream(js)
	} else {
		js.d.DisallowUnknownFields()
		err = js.d.Decode(v)
	}
	if err != nil {
		return true, jsonError(err)
	}
	return true, js.end()
}

// onlySpace reports whether br holds nothing but JSON white space, leaving
// the first other byte unread.
func onlySpace(br *bufio.Reader) (bool, error) {
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return false, br.UnreadByte()
		}
	}
}

// decodeJSONValue decodes b into v keeping numbers exact: the values
// nested in a body (a column default, a change) and stored JSON.
func decodeJSONValue(b []byte, v any) error {
	return newJSONStream(bytes.NewReader(b)).d.Decode(v)
}

// end refuses anything after the value.
func (js *jsonStream) end() error {
	if _, err := js.d.Token(); err != io.EOF {
		if err != nil && !isJSONError(err) {
			return err
		}
		return errorf(ErrInvalidJSON, "the body holds more than one JSON value")
	}
	return nil
}

// token reads the next token.
func (js *jsonStream) token() (json.Token, error) {
	tok, err := js.d.Token()
	if err != nil {
		return nil, jsonError(err)
	}
	return tok, nil
}

// errNotScalar is returned by scalar for an object or an array.
var errNotScalar = errors.New("not a scalar")

// scalar reads one scalar: nil, bool, json.Number or string. An object or
// an array is errNotScalar, and the stream is left inside it.
func (js *jsonStream) scalar() (any, error) {
	tok, err := js.token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); ok {
		js.lastDelim = d
		return nil, errNotScalar
	}
	return tok, nil
}

// object reads an object, calling field for each key; field reads the
// value. Anything but an object is notObject.
func (js *jsonStream) object(notObject error, field func(key string) error) error {
	tok, err := js.token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return notObject
	}
	return js.fields(field)
}

// fields reads the rest of an object whose '{' was read.
func (js *jsonStream) fields(field func(key string) error) error {
	for js.d.More() {
		key, err := js.token()
		if err != nil {
			return err
		}
		if err := field(key.(string)); err != nil {
			return err
		}
	}
	_, err := js.token()
	return err
}

// array reads the rest of an array whose '[' was read, calling item for
// each element; item reads the element.
func (js *jsonStream) array(item func(i int) error) error {
	for i := 0; js.d.More(); i++ {
		if err := item(i); err != nil {
			return err
		}
	}
	_, err := js.token()
	return err
}

// row reads the rest of a row object, whose '{' was read: column name to
// scalar. A row has at most maxColumns keys, as a table has.
func (js *jsonStream) row(what string) (Row, error) {
	row := Row{}
	err := js.fields(func(key string) error {
		v, err := js.scalar()
		if err == errNotScalar {
			return errorf(ErrInvalidColumnValue, "%s: column %.80q: an object or an array is not a column value", what, key)
		}
		if err != nil {
			return err
		}
		row[key] = v
		if len(row) > maxColumns {
			return errorf(ErrInvalidRequest, "%s has more than %d columns", what, maxColumns)
		}
		return nil
	})
	return row, err
}

// rowObject reads one row object; anything else is ErrInvalidRequest.
func (js *jsonStream) rowObject(what string) (Row, error) {
	tok, err := js.token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errorf(ErrInvalidRequest, "%s must be a JSON object of column name to value", what)
	}
	return js.row(what)
}

// rows reads an insert body: one row object, or an array of at most
// maxRows row objects, refused at row maxRows+1.
func (js *jsonStream) rows(maxRows int) ([]Row, error) {
	tok, err := js.token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		row, err := js.row("the row")
		if err != nil {
			return nil, err
		}
		return []Row{row}, nil
	case json.Delim('['):
		rows := []Row{}
		err := js.array(func(i int) error {
			if i >= maxRows {
				return errorf(ErrTooManyRows, "an insert takes at most %d rows", maxRows)
			}
			row, err := js.rowObject("row " + strconv.Itoa(i))
			rows = append(rows, row)
			return err
		})
		return rows, err
	}
	return nil, errorf(ErrInvalidRequest, "the body must be a row object or an array of row objects")
}

// jsonError explains a decoding failure: bad syntax is invalid_json, a
// value of the wrong shape is invalid_request naming the field, and an
// error of ours (a where clause) or of the reader keeps its own code.
func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		pdErr   *Error
	)
	switch {
	case errors.As(err, &pdErr):
		return pdErr
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errorf(ErrInvalidJSON, "the body is not valid JSON")
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return errorf(ErrInvalidRequest, "field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return errorf(ErrInvalidRequest, "the body must be %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(ErrInvalidRequest, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case strings.HasPrefix(err.Error(), "json: "):
		return errorf(ErrInvalidJSON, "the body is not valid JSON")
	}
	return err // the reader's: too large, or the client went away
}

// isJSONError reports whether err is about the JSON text rather than the
// reader.
func isJSONError(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || strings.HasPrefix(err.Error(), "json: ")
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "another kind of value"
}
