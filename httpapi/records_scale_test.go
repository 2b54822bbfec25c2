package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestListRouteAtScale(t *testing.T) {
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"items","columns":[
		{"column_name":"item"},{"column_name":"qty","column_type":"INTEGER"}]}`), 201, "")
	var rows []string
	for i := range 30 {
		rows = append(rows, fmt.Sprintf(`{"item":"i%02d","qty":%d}`, i, i%4))
	}
	a.must(a.do("POST", "/projects/acme/records/items", a.write, "["+strings.Join(rows, ",")+"]"), 201, "")
	list := func(query string) map[string]any {
		t.Helper()
		return a.must(a.do("GET", "/projects/acme/records/items?"+query, a.read, ""), 200, "").data()
	}

	t.Run("WhereOrderColumnsAndCursor", func(t *testing.T) {
		is := is.New(t)
		q := url.Values{
			"where":   {`[{"column":"qty","op":"in","value":[1,3]}]`},
			"order":   {"-qty,item"},
			"columns": {"item,qty"},
			"limit":   {"4"},
		}
		var items []string
		for pages := 0; ; pages++ {
			is.True(pages < 10)
			d := list(q.Encode())
			is.Equal(d["total"], json.Number("15"))
			is.Equal(d["truncated"], false)
			for _, r := range d["rows"].([]any) {
				row := r.(map[string]any)
				is.Equal(len(row), 2) // item and qty only
				items = append(items, row["item"].(string))
			}
			if d["next_cursor"] == nil {
				break
			}
			q.Set("after", d["next_cursor"].(string))
		}
		is.Equal(len(items), 15)
		is.Equal(items[:3], []string{"i03", "i07", "i11"}) // qty 3 first, then by item
		is.Equal(items[len(items)-1], "i29")
	})
	t.Run("WhereObjectFormAndCountNone", func(t *testing.T) {
		is := is.New(t)
		d := list("where=" + url.QueryEscape(`{"qty":2}`) + "&count=none")
		is.Equal(d["total"], nil)
		is.Equal(len(d["rows"].([]any)), 7)
		is.Equal(d["next_cursor"], nil)
	})
	t.Run("Refusals", func(t *testing.T) {
		is := is.New(t)
		for _, c := range []struct{ query, code string }{
			{"colour=red", "invalid_request"},
			{"limit=5&Order=item", "invalid_request"},
			{"where=" + url.QueryEscape(`{"qty":`), "invalid_where"},
			{"where=" + url.QueryEscape(`"qty"`), "invalid_where"},
			{"after=garbage", "invalid_cursor"},
			{"count=estimate", "invalid_request"},
			{"columns=item,nope", "column_not_found"},
			{"offset=3&after=" + url.QueryEscape("AAAAAAAAAAAAAAAAAAAAAAAA"), "invalid_request"},
			{"offset=0&after=" + url.QueryEscape("AAAAAAAAAAAAAAAAAAAAAAAA"), "invalid_request"}, // sent, even as 0
		} {
			res := a.do("GET", "/projects/acme/records/items?"+c.query, a.read, "")
			is.Equal(res.code(), c.code)
		}
		res := a.must(a.do("GET", "/projects/acme/records/items?colour=red", a.read, ""), 400, "invalid_request")
		is.True(strings.Contains(res.Env.Error.Message, `"colour"`)) // names the parameter
		res = a.must(a.do("GET", "/projects/acme/exports?state=ready", a.read, ""), 400, "invalid_request")
		is.True(strings.Contains(res.Env.Error.Message, `"state"`))
		a.must(a.do("GET", "/projects/acme/exports?status=all&limit=5&offset=0", a.read, ""), 200, "")
	})
	t.Run("CursorOfAnotherOrder", func(t *testing.T) {
		d := list("order=item&limit=2")
		a.must(a.do("GET", "/projects/acme/records/items?order=-item&after="+url.QueryEscape(d["next_cursor"].(string)), a.read, ""), 400, "invalid_cursor")
	})
}

func TestPatchRecordRoute(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[
		{"column_name":"name","is_unique":true},{"column_name":"n","column_type":"INTEGER"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"a","n":1},{"name":"b","n":2}]`), 201, "")

	res := a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `{"n":"42"}`), 200, "")
	is.Equal(res.data()["table"], "t")
	is.Equal(res.data()["row"], map[string]any{"id": json.Number("1"), "name": "a", "n": json.Number("42")})
	res = a.must(a.do("GET", "/projects/acme/records/t/1", a.read, ""), 200, "")
	is.Equal(res.data()["row"].(map[string]any)["n"], json.Number("42"))

	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.read, `{"n":1}`), 403, "permission_denied")
	a.must(a.do("PATCH", "/projects/acme/records/t/99", a.write, `{"n":1}`), 404, "record_not_found")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `{}`), 400, "invalid_request")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, ``), 400, "invalid_request")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `[{"n":1}]`), 400, "invalid_request")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `{"n":"abc"}`), 400, "invalid_column_value")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `{"name":"b"}`), 409, "unique_violation")
	a.must(a.do("PATCH", "/projects/acme/records/t/1", a.write, `{"nope":1}`), 404, "column_not_found")
}
