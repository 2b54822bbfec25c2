package projectdata_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestReplicatorTablesStayHidden creates, behind the Store's back, the
// tables Litestream adds to every database it replicates: no listing shows
// them and the query sandbox cannot read them, whatever the form of the
// read.
func TestReplicatorTablesStayHidden(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	// Litestream's own statements (v0.5).
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), `
		CREATE TABLE IF NOT EXISTS _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);
		CREATE TABLE IF NOT EXISTS _litestream_lock (id INTEGER);
		INSERT INTO _litestream_seq (id, seq) VALUES (1, 7);`)

	tables, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(tables), 1)
	is.Equal(tables[0].Name, "notes")
	proj, count, err := s.GetProject(ctx, "acme")
	is.NoErr(err)
	is.Equal(proj.Slug, "acme")
	is.Equal(count, 1)
	for _, name := range []string{"_litestream_seq", "_litestream_lock", "_LITESTREAM_SEQ"} {
		_, _, err := s.ListColumns(ctx, "acme", name)
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
		_, err = s.ListRecords(ctx, "acme", name, projectdata.ListOptions{})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	}
	for _, sql := range []string{
		`SELECT * FROM _litestream_seq`,
		`SELECT count(*) FROM _litestream_lock`,
		`SELECT seq FROM main._litestream_seq`,
		`WITH x AS (SELECT * FROM _litestream_seq) SELECT * FROM x`,
		`SELECT * FROM notes WHERE id IN (SELECT seq FROM _litestream_seq)`,
	} {
		_, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
		pdtest.Code(t, err, projectdata.ErrQueryTableDenied)
	}
}
