package projectdata

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// TestReadByKeySeeks checks the plan of the one statement that reads a row
// by key with the registry version: the registry's row by its id, then the
// row by its key (the rowid, or the key's index), never a scan.
func TestReadByKeySeeks(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, err := Open(t.TempDir(), nil)
	is.NoErr(err)
	defer s.Close()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "numbered", Columns: []ColumnDef{{Name: "name"}}})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "named", Columns: []ColumnDef{{Name: "code", Primary: true}, {Name: "id", Type: "INTEGER"}, {Name: "version"}}})
	is.NoErr(err)
	err = s.withProject(ctx, "acme", OpGetRecord, func(p *project) error {
		return p.readSchema(ctx, func(c *conn, sc *schema) error {
			for _, name := range []string{"numbered", "named"} {
				tb, err := sc.lookupTable(name)
				is.NoErr(err)
				var plan []string
				err = c.query("EXPLAIN QUERY PLAN "+tb.keys.byKeyAndVersion, []any{"k"}, func(st *sqlite3.Stmt) error {
					plan = append(plan, st.ColumnText(3))
					return nil
				})
				is.NoErr(err)
				is.Equal(len(plan), 2)
				for _, step := range plan {
					if !strings.HasPrefix(step, "SEARCH") {
						t.Errorf("%s: %s\nplan: %q", name, tb.keys.byKeyAndVersion, plan)
					}
				}
			}
			return nil
		})
	})
	is.NoErr(err)
}
