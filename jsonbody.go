package projectdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxQueryParams is SQLite's limit on the parameters of one statement.
const maxQueryParams = 32766

// jsonStream is the one JSON decoder of request bodies: a hand-written
// scanner that reads the body in one pass from its own buffer, keeping
// numbers exact (json.Number). Bodies that hold lists (insert rows, query
// params, where conditions) are read value by value, so a list that is too
// long is refused as soon as it is, never after decoding all of it; nested
// values where a scalar belongs are refused before they are built. It
// allocates only what the caller keeps: strings without escapes are copied
// once from the buffer, strings with escapes (or invalid UTF-8) are
// unquoted by encoding/json, and object keys are interned, so the keys of
// 1,000 rows cost one string each, not 1,000.
//
// The grammar is checked as the value is read: token reads the start of a
// value (a scalar, or the '{' or '[' of a container), fields and array read
// the rest of a container, end refuses anything after the value. Syntax
// errors are ErrInvalidJSON, an error of the reader goes through as it is.
type jsonStream struct {
	r         io.Reader
	buf       []byte // buf[pos:lim] is read and not yet scanned
	pos, lim  int
	rerr      error      // the reader's error, once it returned one (io.EOF at the end)
	lastDelim json.Delim // the container scalar found instead of a scalar
	// firstKeys[:nFirst] are the first keys interned, searched in order;
	// keys holds the ones after them. A body of one small object (a row,
	// a query) then makes no map.
	firstKeys [8]string
	nFirst    int
	keys      map[string]string
	rowHint   int // the size of the last row, for the next one's map
}

// maxInternedKeys bounds the interned keys of one stream.
const maxInternedKeys = 2 * maxColumns

// streamBufSize is the size of a stream's buffer, unless a value does not
// fit in it.
const streamBufSize = 16 << 10

// streamBufs keeps the buffers of finished streams for the next ones: a
// body of one row would otherwise allocate (and clear) 16 KiB.
var streamBufs = sync.Pool{New: func() any { return new([streamBufSize]byte) }}

// newJSONStream is a stream over r; release gives its buffer back.
func newJSONStream(r io.Reader) *jsonStream {
	return &jsonStream{r: r, buf: streamBufs.Get().(*[streamBufSize]byte)[:]}
}

// release gives the stream's buffer back for another stream. Nothing
// decoded refers to it: strings and numbers are copied out of it.
func (js *jsonStream) release() {
	if len(js.buf) == streamBufSize && js.r != nil {
		streamBufs.Put((*[streamBufSize]byte)(js.buf))
	}
	js.buf = nil
}

// newJSONBytes is a stream over b, already in memory.
func newJSONBytes(b []byte) *jsonStream {
	return &jsonStream{buf: b, lim: len(b), rerr: io.EOF}
}

// fill reads more of the body, keeping buf[pos:lim] (moved to the front,
// in a buffer twice as large when it is full). It reports whether bytes
// arrived; when none did, rerr says why.
func (js *jsonStream) fill() bool {
	if js.rerr != nil {
		return false
	}
	if js.pos > 0 {
		js.lim = copy(js.buf, js.buf[js.pos:js.lim])
		js.pos = 0
	}
	if js.lim == len(js.buf) {
		nb := make([]byte, 2*len(js.buf))
		copy(nb, js.buf[:js.lim])
		js.buf = nb
	}
	for {
		n, err := js.r.Read(js.buf[js.lim:])
		js.lim += n
		if err != nil {
			js.rerr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// cut is the error of a body that ends (or fails) in the middle of a value.
func (js *jsonStream) cut() error {
	if js.rerr == nil || js.rerr == io.EOF {
		return invalidJSON()
	}
	return js.rerr
}

func invalidJSON() error {
	return errorf(ErrInvalidJSON, "the body is not valid JSON")
}

// peek returns the next byte after white space, unread. At the end of the
// body it returns the reader's error (io.EOF when the body just ended).
func (js *jsonStream) peek() (byte, error) {
	for {
		for js.pos < js.lim {
			c := js.buf[js.pos]
			if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				return c, nil
			}
			js.pos++
		}
		if !js.fill() {
			return 0, js.rerr
		}
	}
}

// next is peek for a byte that must come: the end of the body is cut.
func (js *jsonStream) next() (byte, error) {
	c, err := js.peek()
	if err != nil {
		return 0, js.cut()
	}
	return c, nil
}

// end refuses anything after the value.
func (js *jsonStream) end() error {
	_, err := js.peek()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	}
	return errorf(ErrInvalidJSON, "the body holds more than one JSON value")
}

// token reads the start of a value: a scalar (nil, bool, json.Number or
// string), or json.Delim('{') or json.Delim('[') for a container, whose
// rest fields or array read.
func (js *jsonStream) token() (json.Token, error) {
	c, err := js.next()
	if err != nil {
		return nil, err
	}
	switch c {
	case '{', '[':
		js.pos++
		return json.Delim(c), nil
	case '"':
		return js.str()
	case 't':
		return true, js.literal("true")
	case 'f':
		return false, js.literal("false")
	case 'n':
		return nil, js.literal("null")
	}
	if c == '-' || (c >= '0' && c <= '9') {
		return js.number()
	}
	return nil, invalidJSON()
}

// literal reads true, false or null.
func (js *jsonStream) literal(word string) error {
	for js.lim-js.pos < len(word) {
		if !js.fill() {
			return js.cut()
		}
	}
	if string(js.buf[js.pos:js.pos+len(word)]) != word {
		return invalidJSON()
	}
	js.pos += len(word)
	return nil
}

// at returns the byte i after pos, reading more of the body as needed;
// false when the body ends first.
func (js *jsonStream) at(i int) (byte, bool) {
	for js.pos+i >= js.lim {
		if !js.fill() {
			return 0, false
		}
	}
	return js.buf[js.pos+i], true
}

// digits returns the index after the run of digits starting at i.
func (js *jsonStream) digits(i int) int {
	for {
		c, ok := js.at(i)
		if !ok || c < '0' || c > '9' {
			return i
		}
		i++
	}
}

// number reads a number as JSON writes it, kept exact as json.Number.
func (js *jsonStream) number() (json.Token, error) {
	n, err := js.numberText()
	if err != nil {
		return nil, err
	}
	return json.Number(n), nil
}

// numberText reads a number as JSON writes it and returns its text, valid
// until the next read.
func (js *jsonStream) numberText() ([]byte, error) {
	i := 0
	c, _ := js.at(0)
	if c == '-' {
		i++
	}
	switch c, ok := js.at(i); {
	case !ok:
		return nil, js.cut()
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = js.digits(i + 1)
	default:
		return nil, invalidJSON()
	}
	if c, ok := js.at(i); ok && c == '.' {
		j := js.digits(i + 1)
		if j == i+1 {
			return nil, js.cutOr(i + 1)
		}
		i = j
	}
	if c, ok := js.at(i); ok && (c == 'e' || c == 'E') {
		i++
		if c, ok := js.at(i); ok && (c == '+' || c == '-') {
			i++
		}
		j := js.digits(i)
		if j == i {
			return nil, js.cutOr(i)
		}
		i = j
	}
	if js.rerr != nil && js.rerr != io.EOF && js.pos+i >= js.lim {
		return nil, js.rerr // the number may go on past the reader's failure
	}
	n := js.buf[js.pos : js.pos+i]
	js.pos += i
	return n, nil
}

// cutOr is the error of a number missing its digits at i: cut when the
// body ended there, invalid JSON otherwise.
func (js *jsonStream) cutOr(i int) error {
	if _, ok := js.at(i); !ok {
		return js.cut()
	}
	return invalidJSON()
}

// quoted reads a string and returns it as it is in the body, quotes
// included (valid until the next read), and whether it needs unquoting by
// encoding/json: escapes, or bytes that may not be valid UTF-8.
func (js *jsonStream) quoted() ([]byte, bool, error) {
	i := 1 // after the opening quote
	slow := false
	for {
		if js.pos+i >= js.lim {
			if !js.fill() {
				return nil, false, js.cut()
			}
			continue
		}
		b := js.buf[js.pos+i : js.lim]
		j := 0
		for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j] >= 0x20 && b[j] < 0x80 {
			j++
		}
		i += j
		if j == len(b) {
			continue
		}
		switch c := b[j]; {
		case c == '"':
			raw := js.buf[js.pos : js.pos+i+1]
			js.pos += i + 1
			return raw, slow, nil
		case c == '\\':
			slow = true
			i += 2 // the escaped byte is never the closing quote
		case c < 0x20:
			return nil, false, invalidJSON()
		default:
			slow = true
			i++
		}
	}
}

// unquote decodes a string that quoted found to need it. A string that
// is not UTF-8 is invalid JSON (RFC 8259), not text to store with U+FFFD
// in place of its bytes, as encoding/json would; so is one with an escape
// of half a surrogate pair ("\ud800"), which stands for no character.
func unquote(raw []byte) (string, error) {
	if !utf8.Valid(raw) {
		return "", errorf(ErrInvalidJSON, "the body holds a string that is not valid UTF-8")
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalidJSON()
	}
	if unpairedSurrogate(raw) {
		return "", errorf(ErrInvalidJSON, "the body holds a string with an unpaired UTF-16 surrogate escape, which is no character")
	}
	return s, nil
}

// unpairedSurrogate reports whether raw, a valid JSON string or a body of
// valid JSON, holds a \u escape of a surrogate that is not a high one
// followed by a low one.
func unpairedSurrogate(raw []byte) bool {
	escape := func(i int) rune { // the \uXXXX escape at i, or -1
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r := escape(i)
		switch {
		case r < 0:
			i++ // an escape of one byte, maybe a backslash
		case r >= 0xD800 && r < 0xDC00:
			if low := escape(i + 6); low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

// str reads a string value.
func (js *jsonStream) str() (json.Token, error) {
	s, err := js.text()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// text reads a string value, as a string.
func (js *jsonStream) text() (string, error) {
	raw, slow, err := js.quoted()
	switch {
	case err != nil:
		return "", err
	case slow:
		return unquote(raw)
	}
	return string(raw[1 : len(raw)-1]), nil
}

// key reads an object key: the same keys in every row are one string.
func (js *jsonStream) key() (string, error) {
	raw, slow, err := js.quoted()
	switch {
	case err != nil:
		return "", err
	case slow:
		return unquote(raw)
	}
	name := raw[1 : len(raw)-1]
	for _, k := range js.firstKeys[:js.nFirst] {
		if k == string(name) {
			return k, nil
		}
	}
	if k, ok := js.keys[string(name)]; ok {
		return k, nil
	}
	k := string(name)
	switch {
	case js.nFirst < len(js.firstKeys):
		js.firstKeys[js.nFirst] = k
		js.nFirst++
	case len(js.keys) < maxInternedKeys-len(js.firstKeys):
		if js.keys == nil {
			js.keys = map[string]string{}
		}
		js.keys[k] = k
	}
	return k, nil
}

// jsonStreamer is a body type that decodes itself from the stream.
type jsonStreamer interface {
	decodeJSONStream(js *jsonStream) error
}

// DecodeJSON decodes one JSON request body from r into v. Numbers stay
// exact (json.Number); unknown object fields, fields named in another case
// or given twice in one object, and trailing data are refused (a map, such
// as a Row, keeps the last value of a key given twice). Body types of this
// package that hold lists (QueryRequest) are read as a stream and refused
// as soon as they are known to be too large; other types (small
// fixed-shape bodies) are decoded by encoding/json.
// An empty body (nothing but white space) leaves v as it is and returns
// false.
//
// Errors: ErrInvalidJSON (bad syntax, trailing data), ErrInvalidRequest (a
// value of the wrong shape, an unknown field, too many params), the codes
// of the body's own checks (ErrInvalidWhere), and any error r returns.
func DecodeJSON(r io.Reader, v any) (bool, error) {
	js := newJSONStream(r)
	defer js.release()
	if _, err := js.peek(); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	if s, ok := v.(jsonStreamer); ok {
		if err := s.decodeJSONStream(js); err != nil {
			return true, err
		}
		return true, js.end()
	}
	// The body's bytes, kept to check its strings as unquote does: where
	// encoding/json puts U+FFFD, the body is refused.
	body := bytes.NewBuffer(append([]byte(nil), js.buf[js.pos:js.lim]...))
	d := json.NewDecoder(io.MultiReader(bytes.NewReader(js.buf[js.pos:js.lim]), io.TeeReader(r, body)))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return true, jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		if err != nil && !isJSONError(err) {
			return true, err
		}
		return true, errorf(ErrInvalidJSON, "the body holds more than one JSON value")
	}
	switch {
	case !utf8.Valid(body.Bytes()):
		return true, errorf(ErrInvalidJSON, "the body holds a string that is not valid UTF-8")
	case unpairedSurrogate(body.Bytes()): // a backslash is in a string, or invalid JSON
		return true, errorf(ErrInvalidJSON, "the body holds a string with an unpaired UTF-16 surrogate escape, which is no character")
	}
	if t := reflect.TypeOf(v); holdsStruct(t, 0) {
		return true, exactKeys(json.NewDecoder(bytes.NewReader(body.Bytes())), t)
	}
	return true, nil
}

// exactKeys refuses what encoding/json lets through in a body it decoded
// into a value of type t, read again from d: a struct's field given twice
// in one object (see errKeyTwice), and a key that names a struct's field
// in another case ({"WHERE": …}: it takes any case). A value that holds no
// struct (see holdsStruct), such as a row's, is skipped as encoding/json
// read it.
func exactKeys(d *json.Decoder, t reflect.Type) error {
	if !holdsStruct(t, 0) {
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return jsonError(err)
		}
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := d.Token()
	if err != nil {
		return jsonError(err)
	}
	// encoding/json took the body: an array is a slice's or an array's,
	// an object a map's or a struct's.
	switch k := t.Kind(); {
	case tok == json.Delim('[') && (k == reflect.Slice || k == reflect.Array):
		for d.More() {
			if err := exactKeys(d, t.Elem()); err != nil {
				return err
			}
		}
	case tok == json.Delim('{') && (k == reflect.Map || k == reflect.Struct):
		var seen fieldSet
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return jsonError(err)
			}
			key, _ := tok.(string)
			var elem reflect.Type
			if k == reflect.Map {
				elem = t.Elem()
			} else {
				f, ok := jsonField(t, key)
				if !ok {
					return errorf(ErrInvalidRequest, "unknown field %.100q", key)
				}
				if !seen.add(key) {
					return errKeyTwice(key)
				}
				elem = f.Type
			}
			if err := exactKeys(d, elem); err != nil {
				return err
			}
		}
	default:
		return nil // a scalar: null, where encoding/json took one
	}
	if _, err := d.Token(); err != nil { // the closing delimiter
		return jsonError(err)
	}
	return nil
}

// holdsStruct reports whether a value of type t may hold a struct whose
// keys exactKeys checks: t is one, or a pointer to, slice, array or map of
// such a type. Types that decode themselves and interfaces hold none that
// encoding/json matched; depth bounds a type made of itself.
func holdsStruct(t reflect.Type, depth int) bool {
	switch {
	case t == nil:
		return false
	case depth > 16:
		return true
	case t.Kind() == reflect.Interface, reflect.PointerTo(t).Implements(jsonUnmarshaler):
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holdsStruct(t.Elem(), depth+1)
	}
	return false
}

// jsonUnmarshaler is the type of json.Unmarshaler.
var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// jsonField returns the field of struct type t that encoding/json decodes
// the key name into, when name is exactly its name: its tag's, else the
// Go field's, fields of untagged embedded structs included.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case tag == "":
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// decodeJSONValue decodes b into v keeping numbers exact: the values
// nested in a body (a column default, a change) and stored JSON.
func decodeJSONValue(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
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
	var k string
	return js.members(func() (err error) {
		k, err = js.key()
		return err
	}, func() error { return field(k) })
}

// errKeyTwice refuses a body that gives a field of its fixed shape twice
// in one object: encoding/json keeps the last, where a proxy or a log in
// front of the server may read the first. (A row, a map of values, keeps
// the last value of a column given twice, as encoding/json does.)
func errKeyTwice(key string) error {
	return errorf(ErrInvalidRequest, "the body gives %.100q twice in one object", key)
}

// fieldSet is the fields one object of a fixed shape gave, to refuse one
// given twice: no more than its type has, so a list serves.
type fieldSet []string

// add adds k, and reports whether it was new.
func (s *fieldSet) add(k string) bool {
	if slices.Contains(*s, k) {
		return false
	}
	*s = append(*s, k)
	return true
}

// members reads the rest of an object whose '{' was read: for each member,
// key reads its key (from its opening quote) and value its value.
func (js *jsonStream) members(key, value func() error) error {
	c, err := js.next()
	if err != nil {
		return err
	}
	if c == '}' {
		js.pos++
		return nil
	}
	for {
		if c != '"' {
			return invalidJSON()
		}
		if err := key(); err != nil {
			return err
		}
		if c, err = js.next(); err != nil {
			return err
		}
		if c != ':' {
			return invalidJSON()
		}
		js.pos++
		if err := value(); err != nil {
			return err
		}
		if c, err = js.next(); err != nil {
			return err
		}
		js.pos++
		switch c {
		case '}':
			return nil
		case ',':
		default:
			return invalidJSON()
		}
		if c, err = js.next(); err != nil {
			return err
		}
	}
}

// array reads the rest of an array whose '[' was read, calling item for
// each element; item reads the element.
func (js *jsonStream) array(item func(i int) error) error {
	c, err := js.next()
	if err != nil {
		return err
	}
	if c == ']' {
		js.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := item(i); err != nil {
			return err
		}
		if c, err = js.next(); err != nil {
			return err
		}
		js.pos++
		switch c {
		case ']':
			return nil
		case ',':
		default:
			return invalidJSON()
		}
	}
}

// row reads the rest of a row object, whose '{' was read: column name to
// scalar. A row has at most maxColumns keys, as a table has.
func (js *jsonStream) row(what string) (Row, error) {
	row := make(Row, js.rowHint)
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
	js.rowHint = len(row)
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

// insertStart reads the first token of an insert body. A body with none
// (empty, or white space: an HTTP request whose rows were left out) is
// ErrInvalidRequest, the same however its bytes came (with a length or
// chunked), so that an idempotent answer stored for it is the one given.
func (js *jsonStream) insertStart() (json.Token, error) {
	if _, err := js.peek(); err == io.EOF {
		return nil, errorf(ErrInvalidRequest, "send a row object or an array of row objects")
	}
	return js.token()
}

// rows reads an insert body: one row object, or an array of at most
// maxRows row objects, refused at row maxRows+1.
func (js *jsonStream) rows(maxRows int) ([]Row, error) {
	tok, err := js.insertStart()
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
