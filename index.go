package projectdata

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Index is a managed index of an application table: one created through
// CreateIndex. Its definition lives in SQLite's own schema, so its columns
// and statement follow column renames.
type Index struct {
	Name string `json:"name"`
	// Unique is true when the index forbids duplicate values.
	Unique bool `json:"unique"`
	// Origin is how SQLite says the index came to be: "c", created by a
	// CREATE INDEX statement.
	Origin string `json:"origin"`
	// Partial is true for an index with a WHERE clause; managed indexes
	// have none.
	Partial bool `json:"partial"`
	// Columns are the indexed columns, in index order.
	Columns []string `json:"columns"`
	// Managed is true: only managed indexes are listed and can be dropped.
	Managed bool `json:"managed"`
	// SQL is the defining statement, as SQLite keeps it.
	SQL string `json:"sql"`
}

// IndexRequest describes an index to create.
type IndexRequest struct {
	// Columns are the columns to index, in order, by name (or numeric id):
	// at least one, each once.
	Columns []string `json:"columns"`
	// IndexName is the index's name, following the rules of table names
	// (^[A-Za-z_][A-Za-z0-9_]{0,62}$, not starting with _pd_ or sqlite_).
	// Empty: idx_<table>_<column>_<column>…, with the names as stored;
	// when another object has that name (an index of other columns, say:
	// idx_t_a_b indexes both (a, b) and (a_b)), the first of <name>_2,
	// <name>_3, … that none has.
	IndexName string `json:"index_name"`
	// Unique makes the index forbid duplicate values.
	Unique bool `json:"unique"`
}

// CreateIndex creates a managed index on a table (by numeric id or name)
// and returns it. The index is built in the same transaction that records
// it, so it exists whole or not at all.
//
// Errors: ErrTableNotFound, ErrColumnNotFound, ErrInvalidRequest (no
// columns, a column twice, an index_name that breaks the naming rules),
// ErrIndexExists (any table, index, view or trigger has the name, whatever
// its case), ErrUniqueViolation (a unique index over rows with duplicate
// values; nothing is created), ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) CreateIndex(ctx context.Context, slug, table string, req IndexRequest) (Index, error) {
	var out Index
	err := s.withWrite(ctx, slug, writeCall{op: OpCreateIndex, args: []any{table, req}, results: []any{&out}}, func(ctx context.Context, p *project) error {
		if len(req.Columns) == 0 {
			return errorf(ErrInvalidRequest, "columns must name at least one column")
		}
		if req.IndexName != "" {
			if err := checkName(ErrInvalidRequest, "index_name", req.IndexName); err != nil {
				return err
			}
		}
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			cols, err := indexColumns(t, req.Columns)
			if err != nil {
				return err
			}
			name := req.IndexName
			if name == "" {
				if name, err = defaultIndexName(c, t, cols); err != nil {
					return err
				}
			}
			taken, err := nameInUse(c, name)
			if err != nil {
				return err
			}
			if taken {
				return errorf(ErrIndexExists, "a table, index or view named %q already exists", name)
			}
			if err := c.db.Exec(createIndexSQL(name, t, cols, req.Unique)); err != nil {
				if errors.Is(err, sqlite3.CONSTRAINT_UNIQUE) {
					return errorf(ErrUniqueViolation, "table %q has rows with equal values in (%s); a unique index cannot be created over them", t.Name, strings.Join(columnNames(cols), ", "))
				}
				return err
			}
			// No object has the name, so a row that has it is stale (its
			// index was dropped behind the Store's back): replace it.
			if err := c.exec(`INSERT OR REPLACE INTO _pd_indexes (table_id, name, created_at) VALUES (?, ?, ?)`, t.ID, name, s.now()); err != nil {
				return err
			}
			indexes, err := managedIndexes(c, t)
			if err != nil {
				return err
			}
			for _, ix := range indexes {
				if ix.Name == name {
					out = ix
					return nil
				}
			}
			return errors.Errorf("index %q missing right after its creation", name)
		})
	})
	return out, err
}

// defaultIndexName is the name of an index of cols without one (see
// IndexRequest.IndexName). A managed index of the same columns in the same
// order keeps the name: creating it again is ErrIndexExists.
func defaultIndexName(c *conn, t *tableInfo, cols []*columnInfo) (string, error) {
	indexes, err := managedIndexes(c, t)
	if err != nil {
		return "", err
	}
	base := "idx_" + t.Name + "_" + strings.Join(columnNames(cols), "_")
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name += "_" + strconv.Itoa(n)
		}
		taken, err := nameInUse(c, name)
		if err != nil || !taken {
			return name, err
		}
		for _, ix := range indexes {
			if strings.EqualFold(ix.Name, name) && slices.Equal(ix.Columns, columnNames(cols)) {
				return name, nil
			}
		}
	}
}

// indexColumns resolves the requested columns of an index.
func indexColumns(t *tableInfo, refs []string) ([]*columnInfo, error) {
	cols := make([]*columnInfo, 0, len(refs))
	seen := make(map[int64]bool, len(refs))
	for _, ref := range refs {
		col, err := t.lookupColumn(ref)
		if err != nil {
			return nil, err
		}
		if seen[col.ID] {
			return nil, errorf(ErrInvalidRequest, "column %q appears twice in the index", col.Name)
		}
		seen[col.ID] = true
		cols = append(cols, col)
	}
	return cols, nil
}

// columnNames returns the columns' names as stored.
func columnNames(cols []*columnInfo) []string {
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.Name
	}
	return names
}

// createIndexSQL is the CREATE INDEX statement; the index name was checked
// (or built from checked names) and every identifier is quoted.
func createIndexSQL(name string, t *tableInfo, cols []*columnInfo, unique bool) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if unique {
		b.WriteString("UNIQUE ")
	}
	b.WriteString("INDEX ")
	b.WriteString(quoteIdent(name))
	b.WriteString(" ON ")
	b.WriteString(t.quoted)
	b.WriteString(" (")
	for i, col := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col.quoted)
	}
	b.WriteString(")")
	return b.String()
}

// managedIndexes reads a table's managed indexes, oldest first, in one
// statement (one snapshot). Columns come from pragma_index_info, so they
// follow column renames.
func managedIndexes(c *conn, t *tableInfo) ([]Index, error) {
	indexes := []Index{}
	err := c.query(`SELECT l.name, l."unique", l.origin, l.partial, s.sql, ii.name
		FROM _pd_indexes AS i
		JOIN pragma_index_list(?) AS l ON l.name = i.name COLLATE NOCASE
		JOIN sqlite_schema AS s ON s.type = 'index' AND s.name = l.name
		JOIN pragma_index_info(l.name) AS ii
		WHERE i.table_id = ?
		ORDER BY i.id, ii.seqno`, []any{t.Name, t.ID}, func(st *sqlite3.Stmt) error {
		name := st.ColumnText(0)
		if n := len(indexes); n == 0 || indexes[n-1].Name != name {
			indexes = append(indexes, Index{
				Name:    name,
				Unique:  st.ColumnBool(1),
				Origin:  st.ColumnText(2),
				Partial: st.ColumnBool(3),
				Columns: []string{},
				Managed: true,
				SQL:     st.ColumnText(4),
			})
		}
		ix := &indexes[len(indexes)-1]
		ix.Columns = append(ix.Columns, st.ColumnText(5))
		return nil
	})
	return indexes, err
}

// ListIndexes returns the managed indexes of a table (by numeric id or
// name), oldest first, and the table's name. Indexes the Store did not
// create (those behind UNIQUE columns, ones made by hand) are not listed.
//
// Errors: ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) ListIndexes(ctx context.Context, slug, table string) (tableName string, idx []Index, err error) {
	err = s.withProject(ctx, slug, OpListIndexes, func(p *project) error {
		return p.readSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			tableName = t.Name
			idx, err = managedIndexes(c, t)
			return err
		})
	})
	return tableName, idx, err
}

// DropIndex drops a managed index of a table (by numeric id or name; the
// index name is matched case-insensitively) and returns the index's name.
//
// Errors: ErrTableNotFound, ErrIndexNotFound (the table has no index of
// that name), ErrIndexNotManaged (the index was not created by CreateIndex:
// one behind a UNIQUE column, or one made by hand), ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) DropIndex(ctx context.Context, slug, table, index string) (string, error) {
	var name string
	err := s.withWrite(ctx, slug, writeCall{op: OpDropIndex, args: []any{table, index}, results: []any{&name}}, func(ctx context.Context, p *project) error {
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			found, err := c.queryRow(`SELECT name FROM sqlite_schema WHERE type = 'index' AND name = ? COLLATE NOCASE AND tbl_name = ? COLLATE NOCASE`,
				[]any{index, t.Name}, func(st *sqlite3.Stmt) error {
					name = st.ColumnText(0)
					return nil
				})
			if err != nil {
				return err
			}
			if !found {
				return errorf(ErrIndexNotFound, "table %q has no index named %.80q", t.Name, index)
			}
			var id int64
			managed, err := c.queryRow(`SELECT id FROM _pd_indexes WHERE name = ? AND table_id = ?`, []any{name, t.ID}, func(st *sqlite3.Stmt) error {
				id = st.ColumnInt64(0)
				return nil
			})
			if err != nil {
				return err
			}
			if !managed {
				return errorf(ErrIndexNotManaged, "index %q was not created through the API and cannot be dropped through it", name)
			}
			if err := c.db.Exec(`DROP INDEX ` + quoteIdent(name)); err != nil {
				return err
			}
			return c.exec(`DELETE FROM _pd_indexes WHERE id = ?`, id)
		})
	})
	return name, err
}
