package projectdata_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// twinStores opens two Stores with the same project and table, every
// column type, a unique column and a NOT NULL one; dirs are their folders.
func twinStores(t *testing.T, opts *projectdata.Options) (stores [2]*projectdata.Store, dirs [2]string) {
	t.Helper()
	for i := range stores {
		s, dir := pdtest.Open(t, opts)
		if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
			{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"},
			{Name: "num", Type: "NUMERIC"}, {Name: "ok", Type: "BOOLEAN"}, {Name: "at", Type: "DATETIME"},
			{Name: "code", Unique: true}, {Name: "must", NotNull: true, Default: "d"}, {Name: "note", Default: "n"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		stores[i], dirs[i] = s, dir
	}
	return stores, dirs
}

// TestInsertJSONIsInsertOfDecodeRows: for every body, good or bad,
// InsertJSON gives what Insert of DecodeRows's rows gives, the same result
// or the same error (code and message, naming the row and column), and
// leaves the same rows and byte-identical change-log images.
func TestInsertJSONIsInsertOfDecodeRows(t *testing.T) {
	is := is.New(t)
	st, dirs := twinStores(t, &projectdata.Options{MaxInsertRows: 40})
	many := func(n int, row func(i int) string) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(row(i))
		}
		return b.String() + "]"
	}
	bodies := []string{
		`{"name":"one","qty":1,"price":1.5,"num":2,"ok":true,"at":"2026-01-02T03:04:05Z"}`,
		`[{"name":"a","qty":"42","price":"0.25","num":1.5,"ok":"false"},{"qty":2,"name":"b","ok":0,"num":"7"}]`,
		`[{"qty":1e3,"price":3,"num":-0},{"qty":2.0,"price":-0.0,"num":1E-2},{"qty":-9223372036854775808,"price":1e300}]`,
		`[{"qty":9223372036854775807},{"qty":999999999999999999},{"qty":-999999999999999999},{"qty":1000000000000000000}]`,
		`{"qty":9223372036854775808}`,                          // overflows int64
		`[{"qty":1},{"qty":1.5}]`,                              // a fraction in an INTEGER column, row 1
		`[{"price":0.1},{"price":9007199254740993}]`,           // lossy in a REAL column
		`[{"price":1},{"price":123456789012345678}]`,           // lossy in a REAL column
		`{"num":12345678901234567890}`,                         // beyond int64 and float64's digits
		`[{"ok":true},{"ok":2}]`,                               // not a boolean
		`{"at":"yesterday"}`,                                   // not a time
		`{"name":5,"note":true,"must":"x"}`,                    // numbers and booleans as TEXT
		`[{"name":"x"},{"nope":1}]`,                            // unknown column in row 1
		`[{"name":"x"},{"name":"a","NAME":"b"}]`,               // a column given twice
		`[{"qty":"x","qty":5,"name":"last wins"}]`,             // a key given twice: its last value
		`[{"name":"n\u00e9\"\\ \ud83d\ude00"},{"name":"<&>"}]`, // escapes
		`{"name":"bad \u0000 nul"}`,
		`[{"name":{"a":1}}]`, `[{"a":1},[2]]`, `"row"`, `[{"a":1}] x`, `{"a":`, ``,
		`[{"code":"u1"},{"code":"u2"},{"code":"u1"}]`, // unique violation in row 2
		`[{"code":"u3","must":null}]`,                 // NOT NULL violation
		`[]`, `[{}]`, `{}`,
		many(41, func(i int) string { return "{}" }), // too many rows
		many(40, func(i int) string { return fmt.Sprintf(`{"name":"r%d","qty":%d,"price":%d.5}`, i, i, i) }),
		many(40, func(i int) string { // shapes change from row to row
			if i%3 == 0 {
				return fmt.Sprintf(`{"qty":%d,"name":"s%d"}`, i, i)
			}
			return fmt.Sprintf(`{"name":"s%d","qty":%d,"note":null}`, i, i)
		}),
		many(40, func(i int) string { return fmt.Sprintf(`{"id":%d,"name":"k%d"}`, 1000+i, i) }), // given keys
		many(36, func(i int) string { return fmt.Sprintf(`{"id":%d}`, 2000+i%35) }),              // a duplicate key in row 35
	}
	for i, body := range bodies {
		got, gerr := st[0].InsertJSON(ctx, "acme", "items", strings.NewReader(body))
		rows, derr := projectdata.DecodeRows(strings.NewReader(body), 40)
		want, werr := projectdata.InsertResult{}, derr
		if derr == nil {
			want, werr = st[1].Insert(ctx, "acme", "items", rows)
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || projectdata.ErrorCode(gerr) != projectdata.ErrorCode(werr) {
			t.Fatalf("body %d %.60q: InsertJSON: %v; Insert: %v", i, body, gerr, werr)
		}
		is.Equal(got, want) // body i
	}
	dump := func(dir string) string {
		c := pdtest.Raw(t, dir, "acme")
		var b strings.Builder
		for _, q := range []string{`SELECT * FROM items ORDER BY id`, `SELECT last_id, count, table_name, op, data FROM _pd_changes ORDER BY last_id`} {
			st, _, err := c.Prepare(q)
			is.NoErr(err)
			for st.Step() {
				for j := range st.ColumnCount() {
					fmt.Fprintf(&b, "%v|", st.ColumnRawText(j))
				}
				b.WriteString("\n")
			}
			is.NoErr(st.Err())
			is.NoErr(st.Close())
		}
		return b.String()
	}
	a, b := dump(dirs[0]), dump(dirs[1])
	is.True(strings.Count(a, "\n") > 120) // rows and images were written
	is.Equal(a, b)                        // the same rows and change-log images, byte for byte
}

// TestInsertJSONIdempotency: InsertJSON's arguments fingerprint as
// Insert's for the same rows, so a retry through either is a replay, and
// other rows under the same key are refused.
func TestInsertJSONIdempotency(t *testing.T) {
	is := is.New(t)
	st, _ := twinStores(t, nil)
	s := st[0]
	body := `[{"name":"a","qty":1},{"qty":2.0,"price":"3"}]`
	kctx := projectdata.WithIdempotencyKey(ctx, "k1")
	first, err := s.InsertJSON(kctx, "acme", "items", strings.NewReader(body))
	is.NoErr(err)
	rows, err := projectdata.DecodeRows(strings.NewReader(body), 0)
	is.NoErr(err)
	again, err := s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	is.Equal(again.InsertedIDs, first.InsertedIDs) // replayed, not inserted again
	_, err = s.InsertJSON(kctx, "acme", "items", strings.NewReader(body))
	is.NoErr(err)
	_, err = s.InsertJSON(kctx, "acme", "items", strings.NewReader(`[{"name":"b"}]`))
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	page, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*page.Total, int64(2))
}

// TestInsertJSONConcurrent: concurrent bodies (whose decoded cells are
// reused from one body to the next) each insert their own values.
func TestInsertJSONConcurrent(t *testing.T) {
	is := is.New(t)
	st, _ := twinStores(t, nil)
	s := st[0]
	const writers, batches, rows = 4, 10, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for k := range batches {
				var b strings.Builder
				b.WriteString("[")
				for r := range rows {
					if r > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(&b, `{"name":"w%d b%d r%d","qty":%d}`, w, k, r, w*1_000_000+k*1000+r)
				}
				b.WriteString("]")
				if k == batches/2 { // a bad body between good ones
					_, err := s.InsertJSON(ctx, "acme", "items", strings.NewReader(`[{"name":"x"},{"qty":"bad"}]`))
					if projectdata.ErrorCode(err) != projectdata.ErrInvalidColumnValue {
						errs <- fmt.Errorf("bad body: %v", err)
					}
				}
				if _, err := s.InsertJSON(ctx, "acme", "items", strings.NewReader(b.String())); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	page, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: 1000})
	is.NoErr(err)
	is.Equal(len(page.Rows), writers*batches*rows)
	for _, row := range page.Rows {
		q := row["qty"].(int64)
		is.Equal(row["name"], fmt.Sprintf("w%d b%d r%d", q/1_000_000, q/1000%1000, q%1000)) // each row its own values
	}
}

// TestInsertBodyBeyondInternedKeys: past the keys the decoder interns
// (1,000), a key given twice in a row still keeps its last value.
func TestInsertBodyBeyondInternedKeys(t *testing.T) {
	is := is.New(t)
	var b strings.Builder
	b.WriteString("[")
	for i := range 1200 {
		fmt.Fprintf(&b, `{"k%d":%d},`, i, i)
	}
	b.WriteString(`{"late":1,"x":2,"late":"last","x":null}]`)
	want, err := projectdata.DecodeRows(strings.NewReader(b.String()), 0)
	is.NoErr(err)
	got, err := projectdata.DecodeInsertBody(strings.NewReader(b.String()), 0)
	is.NoErr(err)
	is.Equal(got, want)
	is.Equal(got[1200], projectdata.Row{"late": "last", "x": nil})
}

// TestInsertJSONBeyondInternedKeys: a key given twice in a row keeps its
// last value in the insert too when it comes after the 1,000 keys the
// decoder interns (here: two spellings of each of 500 columns).
func TestInsertJSONBeyondInternedKeys(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	def := projectdata.TableDef{Name: "wide"}
	for i := range 499 {
		def.Columns = append(def.Columns, projectdata.ColumnDef{Name: fmt.Sprintf("ab%03d", i)})
	}
	_, _, err := s.CreateTable(ctx, "acme", def)
	is.NoErr(err)
	var b strings.Builder
	b.WriteString("[")
	for i := range 499 {
		fmt.Fprintf(&b, `{"ab%03d":"x"},{"Ab%03d":"y"},`, i, i)
	}
	b.WriteString(`{"id":5000,"AB001":"a","aB002":"b","AB003":"c","aB002":"last","AB003":"z"}]`)
	res, err := s.InsertJSON(ctx, "acme", "wide", strings.NewReader(b.String()))
	is.NoErr(err)
	is.Equal(res.InsertedCount, 999)
	row, err := s.GetRecord(ctx, "acme", "wide", 5000)
	is.NoErr(err)
	is.Equal(row["ab001"], "a")
	is.Equal(row["ab002"], "last")
	is.Equal(row["ab003"], "z")
}

// TestInsertResultAppendJSON: AppendJSON writes what json.Marshal writes,
// for every kind of id an insert or a replayed answer holds.
func TestInsertResultAppendJSON(t *testing.T) {
	is := is.New(t)
	for _, res := range []projectdata.InsertResult{
		{},
		{Table: "items", InsertedIDs: []any{}},
		{Table: `odd "<&>" é`, InsertedCount: 7, InsertedIDs: []any{
			int64(1), int64(-9223372036854775808), "k\u2028<x>\"\\", "", 1.5, 1e21, 1e-7, math.Copysign(0, -1), 0.0, nil, []byte("blob"), int(3), json.Number("12"),
		}},
	} {
		want, err := json.Marshal(res)
		is.NoErr(err)
		got, err := res.AppendJSON([]byte("prefix"))
		is.NoErr(err)
		is.Equal(string(got), "prefix"+string(want))
	}
}
