package projectdata_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/projectdata/projectdata"
)

// FuzzDecodeRowsAgreesWithEncodingJSON checks the hand-written decoder
// against encoding/json (with UseNumber): a body encoding/json refuses is
// refused; an insert body of the accepted shape (one flat object, or an
// array of them, whose values are scalars) decodes to the same rows; any
// other shape is refused. InsertJSON's decoder (cells, not Rows) must
// agree with DecodeRows on every body: the same rows, or the same error.
// `go test` runs the seeds; `go test -fuzz FuzzDecodeRows` explores
// further.
func FuzzDecodeRowsAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":1}`, `[{"a":1,"b":"x"},{"c":null,"d":true,"e":false}]`, ` [ ] `, `[{}]`,
		`{"a":"\u00e9\n\"q\"\\/"}`, `{"a":-0.5e-10,"b":1E+3,"c":9007199254740993}`,
		`{"a":"\ud83d\ude00","b":"\ud800"}`, "{\"a\":\"\xff\xfe\"}", `{"a":1,"a":2}`,
		`{"a":[1]}`, `{"a":{"b":1}}`, `[1]`, `"x"`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":tru}`, `{"a":1,}`, `[{"a":1},]`, `{"a" 1}`, `{"a":1} x`, `{'a':1}`,
		`{"a":"tab	in string"}`, `{"a":-}`, `{"a":1e}`, `{"\u0061":1}`,
		`[{"a":1,"b":2},{"b":3,"a":4},{"a":5,"a":"x","b":null},{"\u0062":6,"b":7}]`,
		`[{"a":1},{"a":2,"b":[]}]`, `[{"a":1},2]`, `[{"a":1},{"A":2,"a":3}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rows, err := projectdata.DecodeRows(bytes.NewReader(body), 0)
		cells, cerr := projectdata.DecodeInsertBody(bytes.NewReader(body), 0)
		if fmt.Sprint(cerr) != fmt.Sprint(err) || projectdata.ErrorCode(cerr) != projectdata.ErrorCode(err) {
			t.Fatalf("%q: InsertJSON's decoder: %v, DecodeRows: %v", body, cerr, err)
		}
		if err == nil && !reflect.DeepEqual(cells, rows) {
			t.Fatalf("%q: InsertJSON's decoder: %#v, DecodeRows: %#v", body, cells, rows)
		}
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		var v any
		jerr := d.Decode(&v)
		if jerr == nil {
			if _, terr := d.Token(); terr != io.EOF {
				jerr = errTrailing // anything after the value
			}
		}
		want, ok := insertShape(v)
		if jerr != nil || !ok {
			if err == nil {
				t.Fatalf("%q: decoded %v, encoding/json: %v (shape ok: %v)", body, rows, jerr, ok)
			}
			return
		}
		if len(want) > 10000 || tooWide(want) {
			return // refused for size, not shape
		}
		if err != nil && !utf8.Valid(body) && projectdata.ErrorCode(err) == projectdata.ErrInvalidJSON {
			return // not UTF-8, so not JSON (RFC 8259); encoding/json puts U+FFFD for the bytes
		}
		if err != nil && projectdata.ErrorCode(err) == projectdata.ErrInvalidJSON && unpairedSurrogate(body) {
			return // an unpaired surrogate escape, no character; encoding/json puts U+FFFD for it
		}
		if err != nil {
			t.Fatalf("%q: refused (%v), encoding/json decodes it", body, err)
		}
		if len(rows) != len(want) || (len(rows) > 0 && !reflect.DeepEqual(rows, want)) {
			t.Fatalf("%q: got %#v, encoding/json %#v", body, rows, want)
		}
	})
}

// unpairedSurrogate reports whether a JSON text holds a \u escape of a
// UTF-16 surrogate that is not half of a pair (high, then low). It reads
// every backslash as an escape: in JSON they stand only in strings.
func unpairedSurrogate(body []byte) bool {
	escaped := func(i int) (rune, bool) { // the \uXXXX at body[i:], if any
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(r), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		r, ok := escaped(i)
		if !ok {
			i++ // a one-character escape: \\ is not the start of another
			continue
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate first
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := escaped(i + 6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
		i += 5
	}
	return false
}

var errTrailing = bytesError("trailing data")

type bytesError string

func (e bytesError) Error() string { return string(e) }

// insertShape returns the rows of an insert body decoded by encoding/json:
// one object, or an array of objects, of scalars.
func insertShape(v any) ([]projectdata.Row, bool) {
	row := func(x any) (projectdata.Row, bool) {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		for _, val := range m {
			switch val.(type) {
			case map[string]any, []any:
				return nil, false
			}
		}
		return projectdata.Row(m), true
	}
	if list, ok := v.([]any); ok {
		rows := make([]projectdata.Row, 0, len(list))
		for _, x := range list {
			r, ok := row(x)
			if !ok {
				return nil, false
			}
			rows = append(rows, r)
		}
		return rows, true
	}
	r, ok := row(v)
	if !ok {
		return nil, false
	}
	return []projectdata.Row{r}, true
}

// tooWide reports whether a row has more columns than a table may.
func tooWide(rows []projectdata.Row) bool {
	for _, r := range rows {
		if len(r) > 500 { // maxColumns
			return true
		}
	}
	return false
}
