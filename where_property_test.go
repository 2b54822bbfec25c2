package projectdata_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// likeMatch is SQLite's LIKE without ESCAPE: % any run, _ one character,
// ASCII letters case-insensitive.
func likeMatch(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if likeMatch(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		if s == "" {
			return false
		}
		_, size := utf8.DecodeRuneInString(s)
		return likeMatch(s[size:], p[1:])
	}
	if s == "" {
		return false
	}
	lower := func(b byte) byte {
		if b >= 'A' && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
	return lower(s[0]) == lower(p[0]) && likeMatch(s[1:], p[1:])
}

// TestWhereMatchesAReference lists, counts and bulk-updates the rows of
// random where clauses (every operator, values given in other types that
// convert) and compares them with the rows a Go reference selects.
func TestWhereMatchesAReference(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "w",
		projectdata.ColumnDef{Name: "i", Type: "INTEGER"},
		projectdata.ColumnDef{Name: "f", Type: "REAL"},
		projectdata.ColumnDef{Name: "s"},
		projectdata.ColumnDef{Name: "b", Type: "BOOLEAN"},
		projectdata.ColumnDef{Name: "d", Type: "DATETIME"},
		projectdata.ColumnDef{Name: "mark", Type: "INTEGER"},
	)
	r := rand.New(rand.NewSource(3))
	ints := []int64{-3, 0, 1, 2, 10, 9223372036854775807}
	floats := []float64{-1.5, 0, 0.5, 1, 2.25, 1e20}
	texts := []string{"", "a", "A", "ab", "Ab%", "b_c", "é", "10", "9", "abc"}
	dates := []string{"2024-01-01T00:00:00.000Z", "2024-01-01T00:00:00.500Z", "2023-12-31T23:59:59.999Z", "2025-06-01T12:00:00.000Z"}
	pick := func(n int) int { return r.Intn(n) }
	var all []projectdata.Row
	for range 200 {
		row := projectdata.Row{"i": nil, "f": nil, "s": nil, "b": nil, "d": nil}
		if pick(5) > 0 {
			row["i"] = ints[pick(len(ints))]
		}
		if pick(5) > 0 {
			row["f"] = floats[pick(len(floats))]
		}
		if pick(5) > 0 {
			row["s"] = texts[pick(len(texts))]
		}
		if pick(5) > 0 {
			row["b"] = int64(pick(2))
		}
		if pick(5) > 0 {
			row["d"] = dates[pick(len(dates))]
		}
		all = append(all, row)
	}
	res, err := s.Insert(ctx, "acme", "w", all)
	is.NoErr(err)
	for k, id := range res.InsertedIDs {
		all[k]["id"] = id
		all[k]["mark"] = nil
	}

	// A condition: its form, the value as the client sends it, and the
	// value it compares in the column's type.
	type cond struct {
		c    projectdata.Condition
		want any // converted value, or []any for lists
	}
	randomValue := func(col string) (sent, stored any) {
		switch col {
		case "i":
			v := ints[pick(len(ints))]
			switch pick(3) {
			case 0:
				return fmt.Sprint(v), v // "42" is 42
			case 1:
				if v < 1<<53 {
					return float64(v), v // 2.0 is 2
				}
			}
			return v, v
		case "f":
			v := floats[pick(len(floats))]
			if v == float64(int64(v)) && pick(2) == 0 {
				return int64(v), v
			}
			return fmt.Sprint(v), v
		case "b":
			v := int64(pick(2))
			if pick(2) == 0 {
				return v == 1, v
			}
			return v, v
		case "d":
			v := dates[pick(len(dates))]
			if v == "2024-01-01T00:00:00.000Z" && pick(2) == 0 {
				return "2024-01-01", v
			}
			return v, v
		}
		v := texts[pick(len(texts))]
		return v, v
	}
	ops := []projectdata.WhereOp{"=", "!=", "<", "<=", ">", ">=", "like", "in", "not_in", "is_null", "is_not_null", "IN", "Like"}
	cols := []string{"i", "f", "s", "b", "d"}
	randomCond := func() cond {
		col := cols[pick(len(cols))]
		op := ops[pick(len(ops))]
		c := cond{c: projectdata.Condition{Column: col, Op: op}}
		switch strings.ToLower(string(op)) {
		case "is_null", "is_not_null":
		case "like":
			p := []string{"a%", "%b%", "_", "A_", "%", "1%", "%c", "é%"}[pick(8)]
			if col != "s" && col != "i" {
				col = "s"
				c.c.Column = col
			}
			c.c.Value, c.want = p, p
		case "in", "not_in":
			var sent, stored []any
			for range 1 + pick(4) {
				a, b := randomValue(col)
				sent, stored = append(sent, a), append(stored, b)
			}
			c.c.Value, c.want = sent, stored
		default:
			c.c.Value, c.want = randomValue(col)
			if pick(8) == 0 && (op == "=" || op == "!=") {
				c.c.Value, c.want = nil, nil // = null is is_null, != null is is_not_null
			}
		}
		return c
	}
	matches := func(row projectdata.Row, c cond) bool {
		v := row[c.c.Column]
		op := strings.ToLower(string(c.c.Op))
		switch {
		case op == "is_null" || (op == "=" && c.want == nil):
			return v == nil
		case op == "is_not_null" || (op == "!=" && c.want == nil):
			return v != nil
		case v == nil:
			return false
		}
		switch op {
		case "like":
			return likeMatch(fmt.Sprint(v), c.want.(string))
		case "in", "not_in":
			in := slices.ContainsFunc(c.want.([]any), func(x any) bool { return sqliteOrder(v, x) == 0 })
			return in == (op == "in")
		}
		n := sqliteOrder(v, c.want)
		switch op {
		case "=":
			return n == 0
		case "!=":
			return n != 0
		case "<":
			return n < 0
		case "<=":
			return n <= 0
		case ">":
			return n > 0
		}
		return n >= 0
	}
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	for k := range rounds {
		var w []cond
		for range 1 + pick(3) {
			w = append(w, randomCond())
		}
		var where projectdata.Where
		var want []any
		for _, c := range w {
			where = append(where, c.c)
		}
		for _, row := range all {
			if !slices.ContainsFunc(w, func(c cond) bool { return !matches(row, c) }) {
				want = append(want, row["id"])
			}
		}
		l, err := s.ListRecords(ctx, "acme", "w", projectdata.ListOptions{Where: where, Columns: []string{"id"}, Limit: 1000})
		is.NoErr(err)
		got := []any{}
		for _, row := range l.Rows {
			got = append(got, row["id"])
		}
		if int(*l.Total) != len(want) || !slices.Equal(got, want) {
			t.Fatalf("where %+v: total %d, ids %v; want %d, %v", where, *l.Total, got, len(want), want)
		}
		upd, err := s.UpdateRecords(ctx, "acme", "w", projectdata.BulkUpdate{Data: projectdata.Row{"mark": k}, Where: where})
		is.NoErr(err)
		is.Equal(upd.AffectedRows, int64(len(want)))
		l, err = s.ListRecords(ctx, "acme", "w", projectdata.ListOptions{Where: projectdata.Where{{Column: "mark", Op: "=", Value: k}}, Columns: []string{"id"}, Limit: 1000})
		is.NoErr(err)
		is.Equal(int(*l.Total), len(want))
	}
}
