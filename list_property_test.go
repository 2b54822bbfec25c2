package projectdata_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// sqliteOrder compares two stored values as SQLite's ORDER BY does: NULL,
// then numbers (integers and reals compared exactly), then text by bytes.
func sqliteOrder(a, b any) int {
	class := func(v any) int {
		switch v.(type) {
		case nil:
			return 0
		case int64, float64:
			return 1
		case string:
			return 2
		}
		return 3
	}
	if ca, cb := class(a), class(b); ca != cb || ca == 0 {
		return cmp.Compare(ca, cb)
	}
	if x, ok := a.(string); ok {
		return strings.Compare(x, b.(string))
	}
	exact := func(v any) *big.Float {
		if i, ok := v.(int64); ok {
			return new(big.Float).SetInt64(i)
		}
		return new(big.Float).SetFloat64(v.(float64))
	}
	return exact(a).Cmp(exact(b))
}

// orderTerms returns the terms of a list order ("-g,s") with the key that
// breaks ties, in the direction of the last term, unless the order names it.
func orderTerms(order, pk string) []string {
	var terms []string
	if order != "" {
		terms = strings.Split(order, ",")
	}
	if slices.Contains(terms, pk) || slices.Contains(terms, "-"+pk) {
		return terms
	}
	if len(terms) > 0 && strings.HasPrefix(terms[len(terms)-1], "-") {
		return append(terms, "-"+pk)
	}
	return append(terms, pk)
}

// randomListValue returns a value for a column of the given type, drawn
// from a small pool so that ties are common, with NULLs, extremes, long and
// non-ASCII text.
func randomListValue(r *rand.Rand, typ string) any {
	if r.Intn(5) == 0 {
		return nil
	}
	switch typ {
	case "NUMERIC":
		pool := []any{int64(0), int64(1), 1.5, -2.25, int64(math.MaxInt64), int64(math.MinInt64), 1e308, -1e308, 9.3e18, 0.1, int64(-7), 5e-324}
		return pool[r.Intn(len(pool))]
	case "REAL":
		pool := []float64{0, 1, -1, 0.5, 1e308, -1e308, 2.5e-300, 123456.789, 1e18, 1e21, 1e20, 1e-7, 1e-6, 1e-4, 1e6, 100, math.Copysign(0, -1), 0.1 + 0.2}
		return pool[r.Intn(len(pool))]
	case "INTEGER":
		return int64(r.Intn(4) - 2)
	case "BOOLEAN":
		return int64(r.Intn(2))
	}
	pool := []string{"", "a", "A", "é", "日本", "a\x01b", "zz", "\U0001F600", "%_", strings.Repeat("x", 300), strings.Repeat("é", 200), "10", "9", "<a&b>", "\u2028\u2029", "\"\\\n\t", "\x7f"}
	return pool[r.Intn(len(pool))]
}

// TestListWalksEveryOrderShape walks tables of every key type and column
// type with random orders, wheres, page sizes and a small result budget,
// and compares each walk with the rows sorted in Go.
func TestListWalksEveryOrderShape(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			is := is.New(t)
			r := rand.New(rand.NewSource(int64(seed)))
			s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxBytes: 2500})
			cols := []projectdata.ColumnDef{
				{Name: "n", Type: "NUMERIC"},
				{Name: "f", Type: "REAL"},
				{Name: "i", Type: "INTEGER"},
				{Name: "b", Type: "BOOLEAN"},
				{Name: "s"},
			}
			types := map[string]string{"n": "NUMERIC", "f": "REAL", "i": "INTEGER", "b": "BOOLEAN", "s": "TEXT"}
			pk := "id"
			keyType := []string{"", "TEXT", "REAL", "INTEGER"}[seed%4] // "": the default id
			if keyType != "" {
				pk = "k"
				cols = append(cols, projectdata.ColumnDef{Name: "k", Type: projectdata.ColumnType(keyType), Primary: true})
				types["k"] = keyType
			}
			createTable(t, s, "p", cols...)
			var all []projectdata.Row
			for j := range 300 {
				row := projectdata.Row{}
				for name, typ := range types {
					if name != "k" {
						row[name] = randomListValue(r, typ)
					}
				}
				if pk == "k" {
					switch keyType { // keys in another order than the rows', zero and negative ones too
					case "TEXT":
						row["k"] = fmt.Sprintf("%c%03d", 'a'+j%7, j)
					case "REAL":
						row["k"] = float64(j%7*100-j) / 4
					case "INTEGER":
						row["k"] = int64(j%7*100 - j)
					}
				}
				all = append(all, row)
			}
			res, err := s.Insert(ctx, "acme", "p", all)
			is.NoErr(err)
			for j, id := range res.InsertedIDs {
				all[j][pk] = id
			}
			// The rows as stored (the REAL column holds floats, say).
			byKey := map[any]projectdata.Row{}
			for row, err := range s.Rows(ctx, "acme", "p", projectdata.ListOptions{Limit: 1000}) {
				is.NoErr(err)
				byKey[row[pk]] = row
			}
			is.Equal(len(byKey), len(all))

			names := []string{"n", "f", "i", "b", "s", pk}
			wheres := []struct {
				json string
				keep func(projectdata.Row) bool
			}{
				{"", func(projectdata.Row) bool { return true }},
				{`{"b":true}`, func(x projectdata.Row) bool { return x["b"] == int64(1) }},
				{`[{"column":"n","op":">","value":0}]`, func(x projectdata.Row) bool {
					return x["n"] != nil && sqliteOrder(x["n"], int64(0)) > 0
				}},
				{`[{"column":"s","op":"is_not_null"},{"column":"f","op":"!=","value":1}]`, func(x projectdata.Row) bool {
					return x["s"] != nil && x["f"] != nil && x["f"] != 1.0
				}},
			}
			truncated := 0
			defer func() { is.True(truncated > 0) }() // the budget cut pages
			for walk := range 10 {
				var terms []string
				for _, j := range r.Perm(len(names))[:1+r.Intn(3)] {
					term := names[j]
					if r.Intn(2) == 0 {
						term = "-" + term
					}
					terms = append(terms, term)
				}
				order := strings.Join(terms, ",")
				terms = orderTerms(order, pk)
				w := wheres[r.Intn(len(wheres))]
				var want []any
				for _, row := range byKey {
					if w.keep(row) {
						want = append(want, row[pk])
					}
				}
				slices.SortFunc(want, func(x, y any) int {
					for _, term := range terms {
						name, desc := strings.CutPrefix(term, "-")
						if c := sqliteOrder(byKey[x][name], byKey[y][name]); c != 0 {
							if desc {
								return -c
							}
							return c
						}
					}
					return 0
				})
				opts := projectdata.ListOptions{Order: order, Limit: 1 + r.Intn(40)}
				if w.json != "" {
					opts.Where = where(t, w.json)
				}
				if r.Intn(2) == 0 { // some columns, maybe not the key or the order's
					for _, j := range r.Perm(len(names))[:1+r.Intn(len(names)-1)] {
						opts.Columns = append(opts.Columns, names[j])
					}
				}
				var got []projectdata.Row
				for pages := 0; ; pages++ {
					is.True(pages <= len(want)+1) // the walk ends
					l, err := s.ListRecords(ctx, "acme", "p", opts)
					is.NoErr(err)
					is.Equal(*l.Total, int64(len(want)))
					// The JSON the HTTP adapter sends holds the same page.
					b, err := s.AppendRecordListJSON(ctx, nil, "acme", "p", opts)
					is.NoErr(err)
					lj, err := json.Marshal(l)
					is.NoErr(err)
					if !bytes.Equal(b, lj) {
						t.Fatalf("AppendRecordListJSON:\n%s\njson.Marshal:\n%s", b, lj)
					}
					if l.Truncated {
						truncated++
					}
					got = append(got, l.Rows...)
					if l.NextCursor == "" {
						break
					}
					is.True(len(l.Rows) > 0)
					opts.After = l.NextCursor
				}
				var wantRows []projectdata.Row
				for _, key := range want {
					row := byKey[key]
					if opts.Columns != nil {
						row = projectdata.Row{}
						for _, name := range opts.Columns {
							row[name] = byKey[key][name]
						}
					}
					wantRows = append(wantRows, row)
				}
				if !reflect.DeepEqual(got, wantRows) {
					t.Fatalf("walk %d, order %q, where %s, columns %q: got %d rows %v\nwant %d rows %v", walk, order, w.json, opts.Columns, len(got), got, len(want), wantRows)
				}
			}
		})
	}
}

// TestListWalkWhileWritersChangeOtherRows walks a table while other
// goroutines insert, update and delete rows around the ones it keeps: each
// row present throughout appears exactly once, and the walk stays in order.
func TestListWalkWhileWritersChangeOtherRows(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "c",
		projectdata.ColumnDef{Name: "g", Type: "INTEGER"},
		projectdata.ColumnDef{Name: "s"},
		projectdata.ColumnDef{Name: "stable", Type: "BOOLEAN", NotNull: true},
	)
	r := rand.New(rand.NewSource(1))
	var stable []projectdata.Row
	for range 400 {
		stable = append(stable, projectdata.Row{"g": randomListValue(r, "INTEGER"), "s": randomListValue(r, "TEXT"), "stable": 1})
	}
	res, err := s.Insert(ctx, "acme", "c", stable)
	is.NoErr(err)
	keep := map[int64]projectdata.Row{}
	for i, id := range res.InsertedIDs {
		stable[i]["id"] = id
		stable[i]["stable"] = int64(1)
		keep[id.(int64)] = stable[i]
	}
	stop := make(chan struct{})
	done := make(chan error, 2)
	for w := range 2 {
		go func() {
			r := rand.New(rand.NewSource(int64(100 + w)))
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				var err error
				switch r.Intn(3) {
				case 0:
					var batch []projectdata.Row
					for range 1 + r.Intn(20) {
						batch = append(batch, projectdata.Row{"g": randomListValue(r, "INTEGER"), "s": randomListValue(r, "TEXT"), "stable": 0})
					}
					_, err = s.Insert(ctx, "acme", "c", batch)
				case 1:
					_, err = s.UpdateRecords(ctx, "acme", "c", projectdata.BulkUpdate{
						Data:  projectdata.Row{"g": randomListValue(r, "INTEGER"), "s": randomListValue(r, "TEXT")},
						Where: projectdata.Where{{Column: "stable", Op: "=", Value: 0}, {Column: "g", Op: "=", Value: int64(r.Intn(4) - 2)}},
					})
				case 2:
					_, err = s.DeleteRecords(ctx, "acme", "c", projectdata.BulkDelete{
						Where: projectdata.Where{{Column: "stable", Op: "=", Value: 0}, {Column: "s", Op: "=", Value: randomListValue(r, "TEXT")}},
					})
				}
				if err != nil {
					done <- err
					return
				}
			}
		}()
	}
	defer func() {
		close(stop)
		for range 2 {
			is.NoErr(<-done)
		}
	}()
	for _, order := range []string{"g,s", "-s,g", "-g,-s", "s", "-id", ""} {
		terms := orderTerms(order, "id")
		compare := func(x, y projectdata.Row) int {
			for _, term := range terms {
				name, desc := strings.CutPrefix(term, "-")
				if c := sqliteOrder(x[name], y[name]); c != 0 {
					if desc {
						return -c
					}
					return c
				}
			}
			return 0
		}
		seen := map[int64]int{}
		var prev projectdata.Row
		for row, err := range s.Rows(ctx, "acme", "c", projectdata.ListOptions{Order: order, Limit: 1 + r.Intn(30)}) {
			is.NoErr(err)
			if prev != nil && compare(prev, row) >= 0 {
				t.Fatalf("order %q: %v came after %v", order, row, prev)
			}
			prev = row
			if id := row["id"].(int64); keep[id] != nil {
				is.Equal(row, keep[id])
				seen[id]++
			}
		}
		for id := range keep {
			if seen[id] != 1 {
				t.Fatalf("order %q: stable row %d seen %d times", order, id, seen[id])
			}
		}
	}
}
