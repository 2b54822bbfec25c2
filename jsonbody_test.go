package projectdata_test

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// errReadTooFar is what endless returns: the decoder read past the point
// where it should have refused the body.
var errReadTooFar = errors.New("read past the refusal point")

// endless is a body that starts with prefix and then fails: a decoder that
// refuses early never reaches the failure.
func endless(prefix string) io.Reader {
	return io.MultiReader(strings.NewReader(prefix), readerFunc(func([]byte) (int, error) { return 0, errReadTooFar }))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestDecodeRefusesEarly(t *testing.T) {
	cases := []struct {
		name   string
		decode func(io.Reader) error
		prefix string
		code   projectdata.Code
	}{
		{"InsertAtRowMaxPlusOne", func(r io.Reader) error {
			_, err := projectdata.DecodeRows(r, 3)
			return err
		}, `[{},{},{},{}`, projectdata.ErrTooManyRows},
		{"InsertNestedValue", func(r io.Reader) error {
			_, err := projectdata.DecodeRows(r, 0)
			return err
		}, `[{"a":[{}`, projectdata.ErrInvalidColumnValue},
		{"QueryParamsPastSQLiteLimit", func(r io.Reader) error {
			var q projectdata.QueryRequest
			_, err := projectdata.DecodeJSON(r, &q)
			return err
		}, `{"sql":"SELECT 1","params":[` + strings.Repeat(`1,`, 32766) + `1`, projectdata.ErrInvalidRequest},
		{"QueryNamedParamsPastSQLiteLimit", func(r io.Reader) error {
			var q projectdata.QueryRequest
			_, err := projectdata.DecodeJSON(r, &q)
			return err
		}, `{"sql":"SELECT 1","params":{` + namedParams(32767), projectdata.ErrInvalidRequest},
		{"QueryContainerParam", func(r io.Reader) error {
			var q projectdata.QueryRequest
			_, err := projectdata.DecodeJSON(r, &q)
			return err
		}, `{"sql":"SELECT 1","params":[{}`, projectdata.ErrInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			err := c.decode(endless(c.prefix))
			is.True(!errors.Is(err, errReadTooFar)) // refused before reading on
			pdtest.Code(t, err, c.code)
		})
	}
}

func namedParams(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`"p` + strings.Repeat("x", i%7) + strconv.Itoa(i) + `":1,`)
	}
	return b.String()
}

func TestDecodeQueryRequest(t *testing.T) {
	is := is.New(t)
	var q projectdata.QueryRequest
	found, err := projectdata.DecodeJSON(strings.NewReader(`{"query":"SELECT ?","params":[9007199254740993, "a", null, true],"limit":0}`), &q)
	is.NoErr(err)
	is.True(found)
	is.Equal(q, projectdata.QueryRequest{SQL: "SELECT ?", Args: []any{json.Number("9007199254740993"), "a", nil, true}, Limit: 1})

	q = projectdata.QueryRequest{}
	is.NoErr(json.Unmarshal([]byte(`{"sql":"SELECT :a","params":{"a":1.5}}`), &q))
	is.Equal(q.Named, map[string]any{"a": json.Number("1.5")})

	found, err = projectdata.DecodeJSON(strings.NewReader(" \n "), &q)
	is.NoErr(err)
	is.True(!found)

	for body, code := range map[string]projectdata.Code{
		`{"sql":"SELECT 1"} {}`:          projectdata.ErrInvalidJSON,
		`{"sql":"SELECT 1"`:              projectdata.ErrInvalidJSON,
		`{"sql":5}`:                      projectdata.ErrInvalidRequest,
		`{"sql":"a","query":"b"}`:        projectdata.ErrInvalidRequest,
		`{"sql":"SELECT 1","x":1}`:       projectdata.ErrInvalidRequest,
		`{"sql":"SELECT 1","params":5}`:  projectdata.ErrInvalidRequest,
		`{"sql":"SELECT 1","limit":1.5}`: projectdata.ErrInvalidRequest,
		`[]`:                             projectdata.ErrInvalidRequest,
	} {
		var q projectdata.QueryRequest
		_, err := projectdata.DecodeJSON(strings.NewReader(body), &q)
		pdtest.Code(t, err, code)
	}
}

func TestDecodeJSONStruct(t *testing.T) {
	is := is.New(t)
	var body struct {
		N any    `json:"n"`
		S string `json:"s"`
	}
	_, err := projectdata.DecodeJSON(strings.NewReader(`{"n": 9007199254740993, "s": "x"}`), &body)
	is.NoErr(err)
	is.Equal(body.N, json.Number("9007199254740993"))
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"n": 1, "other": 2}`), &body)
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"s": 1}`), &body)
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"s": "a"}]`), &body)
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	_, err = projectdata.DecodeJSON(endless(`{"s": "a`), &body)
	is.True(errors.Is(err, errReadTooFar)) // the reader's own error goes through
}

// TestDecodeJSONKeysAreExactAndOnce: encoding/json keeps the last of two
// equal keys, where a proxy or a log in front may read the first, and
// takes a field's name in any case. DecodeJSON refuses both for the
// fields of a body's fixed shape, at any depth; bodies with each field
// once, exactly named, decode as before.
func TestDecodeJSONKeysAreExactAndOnce(t *testing.T) {
	type column struct {
		Name string `json:"column_name"`
		Type string `json:"column_type"`
	}
	type body struct {
		Name    string          `json:"table_name"`
		Columns []column        `json:"columns"`
		Extra   json.RawMessage `json:"extra"`
	}
	for _, c := range []struct {
		json, refusal string
	}{
		{`{"table_name": "t", "columns": [{"column_name": "a", "column_type": "TEXT"}], "extra": {"x": [1]}}`, ""},
		{`{"TABLE_NAME": "t"}`, `unknown field "TABLE_NAME"`},
		{`{"table_name": "t", "columns": [{"column_name": "a", "Column_Type": "TEXT"}]}`, `unknown field "Column_Type"`},
		{`{"table_name": "t", "table_name": "u"}`, `the body gives "table_name" twice`},
		{`{"table_name": "t", "columns": [{"column_name": "a"}, {"column_name": "b", "column_name": "c"}]}`, `the body gives "column_name" twice`},
	} {
		var v body
		_, err := projectdata.DecodeJSON(strings.NewReader(c.json), &v)
		if c.refusal == "" {
			if err != nil || v.Name != "t" || len(v.Columns) != 1 || v.Columns[0].Type != "TEXT" {
				t.Errorf("%s: %+v, %v", c.json, v, err)
			}
			continue
		}
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		if err == nil || !strings.Contains(err.Error(), c.refusal) {
			t.Errorf("%s: got %v, want %s", c.json, err, c.refusal)
		}
	}
	// A row (a map) keeps the last value of a column given twice, as an
	// insert's rows do.
	var row projectdata.Row
	_, err := projectdata.DecodeJSON(strings.NewReader(`{"qty": 1, "qty": 2}`), &row)
	if err != nil || row["qty"] != json.Number("2") {
		t.Fatalf("%v %v", row, err)
	}
	// A bulk delete's body, as the HTTP API reads it.
	var del projectdata.BulkDelete
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"WHERE": {"qty": 1}}`), &del)
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"where": {"qty": 1}, "where": {}}`), &del)
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"where": {"qty": 1}, "allow_all": false}`), &del)
	if err != nil {
		t.Fatal(err)
	}
}

func TestWhereRefusesTooManyConditions(t *testing.T) {
	is := is.New(t)
	var w projectdata.Where
	err := json.Unmarshal([]byte(`[`+strings.TrimSuffix(strings.Repeat(`{"column":"a","op":"=","value":1},`, 1000), ",")+`]`), &w)
	pdtest.Code(t, err, projectdata.ErrInvalidWhere)
	is.True(strings.Contains(err.Error(), "at most"))
}

// TestDecodedValuesOutliveTheBuffer decodes bodies one after another (each
// stream's buffer goes back for the next): what an earlier one decoded
// must not change, so nothing decoded may point into a buffer.
func TestDecodedValuesOutliveTheBuffer(t *testing.T) {
	is := is.New(t)
	body := func(i int) string {
		return `[{"name":"n` + strconv.Itoa(i) + `","e":"\u00e9` + strconv.Itoa(i) + `","qty":` + strconv.Itoa(i) + `.5}]`
	}
	var kept [][]projectdata.Row
	var query []projectdata.QueryRequest
	for i := range 50 {
		rows, err := projectdata.DecodeRows(strings.NewReader(body(i)), 0)
		is.NoErr(err)
		kept = append(kept, rows)
		var q projectdata.QueryRequest
		_, err = projectdata.DecodeJSON(strings.NewReader(`{"sql":"SELECT `+strconv.Itoa(i)+`","params":["p`+strconv.Itoa(i)+`"]}`), &q)
		is.NoErr(err)
		query = append(query, q)
	}
	for i, rows := range kept {
		var want []projectdata.Row
		d := json.NewDecoder(strings.NewReader(body(i)))
		d.UseNumber()
		is.NoErr(d.Decode(&want))
		is.Equal(rows, want) // decoded earlier, unchanged since
		is.Equal(query[i].SQL, "SELECT "+strconv.Itoa(i))
		is.Equal(query[i].Args, []any{"p" + strconv.Itoa(i)})
	}
}

// TestStringsMustBeUTF8: a string of a body that is not UTF-8 makes the
// body invalid JSON (RFC 8259) in every decoder of rows, and an insert
// stores nothing, rather than text with U+FFFD for the bytes.
func TestStringsMustBeUTF8(t *testing.T) {
	is := is.New(t)
	for _, body := range []string{"{\"name\":\"caf\xe9\"}", "{\"na\xffme\":\"x\"}", "[{\"name\":\"ok\"},{\"name\":\"\xc3\"}]"} {
		_, err := projectdata.DecodeRows(strings.NewReader(body), 0)
		pdtest.Code(t, err, projectdata.ErrInvalidJSON)
		_, err = projectdata.DecodeInsertBody(strings.NewReader(body), 0)
		pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	}
	var row projectdata.Row
	pdtest.Code(t, json.Unmarshal([]byte("{\"name\":\"caf\xe9\"}"), &row), projectdata.ErrInvalidJSON)

	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "people", projectdata.ColumnDef{Name: "name"})
	_, err := s.InsertJSON(ctx, "acme", "people", strings.NewReader("[{\"name\":\"ok\"},{\"name\":\"caf\xe9\"}]"))
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	is.Equal(total(t, s, "people"), int64(0))
	res, err := s.InsertJSON(ctx, "acme", "people", strings.NewReader(`{"name":"café ☕"}`))
	is.NoErr(err)
	row, err = s.GetRecord(ctx, "acme", "people", res.InsertedIDs[0])
	is.NoErr(err)
	is.Equal(row["name"], "café ☕")
}

// TestUnpairedSurrogateEscapesAreRefused: an escape of half a UTF-16
// surrogate pair ("\ud800") stands for no character, so a string holding
// one is not text either; it is refused as invalid bytes are, rather than
// stored as U+FFFD. A pair, and an escaped backslash before "ud800", are text.
func TestUnpairedSurrogateEscapesAreRefused(t *testing.T) {
	is := is.New(t)
	for _, body := range []string{`{"name":"\ud800"}`, `{"name":"a\udc00b"}`, `{"name":"\ud83d"}`, `{"name":"\ud83d\u0041"}`, `{"name":"\udE00\ud83d"}`, `[{"name":"ok"},{"name":"\uDBFF"}]`} {
		_, err := projectdata.DecodeRows(strings.NewReader(body), 0)
		pdtest.Code(t, err, projectdata.ErrInvalidJSON)
		_, err = projectdata.DecodeInsertBody(strings.NewReader(body), 0)
		pdtest.Code(t, err, projectdata.ErrInvalidJSON)
		var row projectdata.Row
		pdtest.Code(t, json.Unmarshal([]byte(body[strings.LastIndex(body, "{"):strings.LastIndex(body, "}")+1]), &row), projectdata.ErrInvalidJSON)
	}
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "people", projectdata.ColumnDef{Name: "name"})
	_, err := s.InsertJSON(ctx, "acme", "people", strings.NewReader(`[{"name":"ok"},{"name":"\ud800"}]`))
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	is.Equal(total(t, s, "people"), int64(0))
	for body, want := range map[string]string{`{"name":"\ud83d\ude00"}`: "😀", `{"name":"\\ud800"}`: `\ud800`, `{"name":"\\\ud83d\uDE00\u00e9"}`: `\😀é`} {
		res, err := s.InsertJSON(ctx, "acme", "people", strings.NewReader(body))
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "people", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["name"], want)
	}
	// The bodies encoding/json decodes (a column's default, a name) too.
	var upd projectdata.ColumnUpdate
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"default_value": "a\udc00"}`), &upd)
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	_, err = projectdata.DecodeJSON(strings.NewReader("{\"default_value\": \"caf\xe9\"}"), &upd)
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	_, err = projectdata.DecodeJSON(strings.NewReader(`{"default_value": "\\ud800 \ud83d\ude00"}`), &upd)
	is.NoErr(err)
	is.Equal(upd.Default.To, `\ud800 😀`)
}

// TestQueryBodyRefusesAFieldGivenTwice: a query's body, which DecodeJSON
// reads as a stream, refuses a field given twice as the other bodies do.
// Its named parameters, a map, keep the last value of one given twice.
func TestQueryBodyRefusesAFieldGivenTwice(t *testing.T) {
	for _, body := range []string{
		`{"sql": "SELECT 1", "sql": "SELECT 2"}`,
		`{"sql": "SELECT 1", "limit": 1, "params": [], "limit": 2}`,
		`{"sql": "SELECT 1", "params": [], "query": "SELECT 1", "params": [1]}`,
	} {
		var q projectdata.QueryRequest
		_, err := projectdata.DecodeJSON(strings.NewReader(body), &q)
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		if !strings.Contains(err.Error(), "twice in one object") {
			t.Errorf("%.60s: %v", body, err)
		}
	}
	var q projectdata.QueryRequest
	_, err := projectdata.DecodeJSON(strings.NewReader(`{"sql": "SELECT :a", "params": {"a": 1, "a": 2}}`), &q)
	if err != nil || q.Named["a"] != json.Number("2") {
		t.Fatalf("%v %v", q.Named, err)
	}
}
