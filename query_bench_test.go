package projectdata_test

import (
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// BenchmarkQueryPrimaryKey is a primary-key lookup through the guarded
// Query path: lexer, authorizer, prepare, bind, step.
func BenchmarkQueryPrimaryKey(b *testing.B) {
	f := newQueryFixture(b, nil, 10000)
	req := projectdata.QueryRequest{SQL: `SELECT id, item, qty FROM orders WHERE id = ?`, Args: []any{int64(0)}}
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		i++
		req.Args[0] = i%10000 + 1
		res, err := f.s.Query(ctx, "acme", req)
		if err != nil || res.RowCount != 1 {
			b.Fatal(err, res.RowCount)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkQueryPrimaryKeyRaw is the raw-driver twin: the same ad-hoc
// statement prepared, bound and stepped on a read-only connection.
func BenchmarkQueryPrimaryKeyRaw(b *testing.B) {
	f := newQueryFixture(b, nil, 10000)
	db, err := sqlite3.OpenFlags(filepath.Join(f.dir, "acme", "project.db"), sqlite3.OPEN_READONLY)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		i++
		st, _, err := db.Prepare(`SELECT id, item, qty FROM orders WHERE id = ?`)
		if err != nil {
			b.Fatal(err)
		}
		st.BindInt64(1, i%10000+1)
		n := 0
		for st.Step() {
			_, _, _ = st.ColumnInt64(0), st.ColumnText(1), st.ColumnInt64(2)
			n++
		}
		st.Close()
		if n != 1 {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
