package projectdata

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Loading the registry, and changing it.
//
// A schema change (writeSchema) loads the registry once, as the change
// begins. The registry it leaves is that one with the tables it changed
// read again (reloadTable): with 300 tables of 100 columns a whole load
// took some 0.1 s and 17 MB, and a change used to make three of them, then
// every Store's readers a fourth. The registry it leaves is cached once it
// commits, under the version it raised, so that no connection of this
// Store loads it again: the first to use it reads only the names of the
// database's tables and views (schema.objects), which a table made behind
// the Store's back changes without raising the version.

// registryLoads counts the registries loaded whole (loadSchema), for the
// test that a schema change loads it once (registry_hook_internal_test.go).
var registryLoads atomic.Int64

// The registry's statements: loadSchema reads every row, loadTable one
// table's.
const (
	registryTablesSQL  = `SELECT id, name, display_name, created_at, updated_at FROM _pd_tables`
	registryColumnsSQL = `SELECT id, table_id, name, type, is_nullable, default_value, is_primary, is_unique, created_at, updated_at FROM _pd_columns`
)

// loadSchema reads the registry through c, which must be inside a
// transaction: its statements then read one snapshot.
func loadSchema(c *conn) (*schema, error) {
	registryLoads.Add(1)
	return readRegistry(c)
}

// readRegistry is loadSchema, uncounted.
func readRegistry(c *conn) (*schema, error) {
	sc := &schema{byName: map[string]*tableInfo{}, byID: map[int64]*tableInfo{}}
	err := c.query(registryTablesSQL+` ORDER BY id`, nil, func(st *sqlite3.Stmt) error {
		sc.add(scanTable(st))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.query(registryColumnsSQL+` ORDER BY table_id, position`, nil, func(st *sqlite3.Stmt) error {
		t := sc.byID[st.ColumnInt64(1)]
		if t == nil {
			return errors.New("column of an unknown table")
		}
		return t.scanColumn(st)
	})
	if err != nil {
		return nil, err
	}
	for _, t := range sc.tables {
		t.prepareRowKeys()
	}
	sc.objects, err = schemaObjects(c)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// loadTable reads one table of the registry, with its columns, through c
// (inside a transaction); nil when the registry has no table id.
func loadTable(c *conn, id int64) (*tableInfo, error) {
	var t *tableInfo
	_, err := c.queryRow(registryTablesSQL+` WHERE id = ?`, []any{id}, func(st *sqlite3.Stmt) error {
		t = scanTable(st)
		return nil
	})
	if err != nil || t == nil {
		return nil, err
	}
	err = c.query(registryColumnsSQL+` WHERE table_id = ? ORDER BY position`, []any{id}, func(st *sqlite3.Stmt) error {
		return t.scanColumn(st)
	})
	if err != nil {
		return nil, err
	}
	t.prepareRowKeys()
	return t, nil
}

// scanTable makes a table, without its columns, of a row of
// registryTablesSQL.
func scanTable(st *sqlite3.Stmt) *tableInfo {
	t := &tableInfo{
		Table:  Table{ID: st.ColumnInt64(0), Name: st.ColumnText(1)},
		byName: map[string]*columnInfo{},
		byID:   map[int64]*columnInfo{},
	}
	if st.ColumnType(2) != sqlite3.NULL {
		d := st.ColumnText(2)
		t.DisplayName = &d
	}
	t.CreatedAt, t.UpdatedAt = timeOrZero(st, 3), timeOrZero(st, 4)
	t.quoted = quoteIdent(t.Name)
	return t
}

// scanColumn adds to t its next column, a row of registryColumnsSQL.
func (t *tableInfo) scanColumn(st *sqlite3.Stmt) error {
	col := &columnInfo{Column: Column{
		ID:         st.ColumnInt64(0),
		TableName:  t.Name,
		Name:       st.ColumnText(2),
		Type:       st.ColumnText(3),
		IsNullable: Bit(st.ColumnBool(4)),
		IsPrimary:  Bit(st.ColumnBool(6)),
		IsUnique:   Bit(st.ColumnBool(7)),
		CreatedAt:  timeOrZero(st, 8),
		UpdatedAt:  timeOrZero(st, 9),
	}}
	if st.ColumnType(5) != sqlite3.NULL {
		if err := decodeJSONValue(st.ColumnRawText(5), &col.DefaultValue); err != nil {
			return errors.Wrap(err, "column default")
		}
	}
	col.quoted = quoteIdent(col.Name)
	t.columns = append(t.columns, col)
	t.byName[foldName(col.Name)] = col
	t.byID[col.ID] = col
	if col.IsPrimary {
		t.pk = col
	}
	return nil
}

// add adds table t to the registry being built.
func (sc *schema) add(t *tableInfo) {
	sc.tables = append(sc.tables, t)
	sc.byName[foldName(t.Name)] = t
	sc.byID[t.ID] = t
}

// schemaObjects reads the lower-case names of every table and view in the
// database (schema.objects).
func schemaObjects(c *conn) (map[string]bool, error) {
	objects := map[string]bool{}
	err := c.query(`SELECT lower(name) FROM sqlite_schema WHERE type IN ('table', 'view')`, nil, func(st *sqlite3.Stmt) error {
		objects[st.ColumnText(0)] = true
		return nil
	})
	return objects, err
}

// registryEdit is the registry of a schema change under way (writeSchema):
// the registry as the change began, and the tables the change read again.
type registryEdit struct {
	before   *schema
	reloaded map[int64]*tableInfo // nil where the table is gone
}

// verifyRegistryEdits makes every schema change check, before commit, that
// the registry it leaves (registryEdit.after) equals the registry loaded
// whole: that it read again every table it changed. Tests set it.
var verifyRegistryEdits = false

// reloadTable reads table id of the registry as the schema change under
// way on c left it, and returns it (nil when the registry no longer has
// it). A schema change must read again, through it, every table whose rows
// in _pd_tables or _pd_columns it wrote: the registry it leaves has every
// other table as the change found it.
func (c *conn) reloadTable(id int64) (*tableInfo, error) {
	if c.edit == nil {
		return nil, errors.New("reloadTable outside a schema change")
	}
	t, err := loadTable(c, id)
	if err != nil {
		return nil, err
	}
	c.edit.reloaded[id] = t
	return t, nil
}

// after returns the registry as the change leaves it, at version: the
// registry it began with, with the tables read again in place of theirs,
// and without its objects (read when it is first used, see
// project.schemaAt). The other tables are shared with e.before, which is
// never cached.
func (e *registryEdit) after(c *conn, version int64) (*schema, error) {
	n := len(e.before.tables) + len(e.reloaded)
	sc := &schema{version: version, byName: make(map[string]*tableInfo, n), byID: make(map[int64]*tableInfo, n)}
	for _, t := range e.before.tables {
		if again, ok := e.reloaded[t.ID]; ok {
			t = again
		}
		if t != nil {
			sc.add(t)
		}
	}
	created := false
	for id, t := range e.reloaded {
		if _, ok := e.before.byID[id]; !ok && t != nil {
			sc.add(t)
			created = true
		}
	}
	if created {
		slices.SortFunc(sc.tables, func(a, b *tableInfo) int { return cmp.Compare(a.ID, b.ID) })
	}
	// sc.objects stays nil: a table made behind the Store's back after the
	// change commits must be among them, so each Store's first read of this
	// version reads them (see project.schemaAt).
	if verifyRegistryEdits {
		if err := checkRegistryEdit(c, sc); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// checkRegistryEdit fails when sc, a registry a change built (see after),
// differs from the registry loaded whole through c.
func checkRegistryEdit(c *conn, sc *schema) error {
	whole, err := readRegistry(c)
	if err != nil {
		return err
	}
	if len(whole.tables) != len(sc.tables) {
		return errors.Errorf("registry edit: %d tables, %d registered", len(sc.tables), len(whole.tables))
	}
	for i, t := range whole.tables {
		built := sc.tables[i]
		if !reflect.DeepEqual(built.Table, t.Table) || !reflect.DeepEqual(built.columnList(), t.columnList()) {
			return errors.Errorf("registry edit: table %q changed but was not read again (reloadTable)", t.Name)
		}
	}
	return nil
}

// writeSchema is write for operations that change the registry or the
// schema: it raises the registry version in the same transaction, so every
// connection (of this Store or of another on the same folder) reloads the
// registry once the change commits, and fn gets a freshly loaded registry.
// fn reads again every table it changes (conn.reloadTable); the registry
// that leaves is cached once the change commits.
func (p *project) writeSchema(ctx context.Context, fn func(c *conn, sc *schema) error) error {
	var after *schema
	err := p.writeAlone(ctx, func(c *conn) error {
		c.changingRegistry = true
		defer func() { c.changingRegistry, c.edit = false, nil }()
		var version int64
		found, err := c.queryRow(`UPDATE _pd_registry SET version = version + 1 WHERE id = 1 RETURNING version`, nil, func(st *sqlite3.Stmt) error {
			version = st.ColumnInt64(0)
			return nil
		})
		if err == nil && !found {
			err = errors.New("registry version row missing")
		}
		if err != nil {
			return err
		}
		before, err := loadSchema(c)
		if err != nil {
			return err
		}
		c.edit = &registryEdit{before: before, reloaded: map[int64]*tableInfo{}}
		if err := fn(c, before); err != nil {
			return err
		}
		sc, err := c.edit.after(c, version)
		if err != nil {
			return err
		}
		if err := logSchemaChanges(c, before, sc); err != nil {
			return err
		}
		after = sc
		return nil
	})
	if err != nil {
		return err
	}
	p.cacheSchema(after) // committed
	return nil
}
