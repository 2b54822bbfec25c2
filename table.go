package projectdata

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Table is a registered application table.
type Table struct {
	ID          int64     `json:"id"`
	Name        string    `json:"table_name"`
	DisplayName *string   `json:"display_name"`
	CreatedAt   Timestamp `json:"created_at"`
	UpdatedAt   Timestamp `json:"updated_at"`
}

// TableDef describes a table to create.
type TableDef struct {
	// Name is the table name: ^[A-Za-z_][A-Za-z0-9_]{0,62}$, not starting
	// with _pd_ or sqlite_.
	Name string
	// DisplayName is an optional display name.
	DisplayName *string
	// Columns in order. At most one is Primary; without one the table gets
	// an automatic "id INTEGER PRIMARY KEY" as its first column.
	Columns []ColumnDef
}

// ColumnDef describes a column to create.
type ColumnDef struct {
	Name string
	// Type is a column type's name in any case ("integer"), such as the
	// Type constants (TypeInteger, …); empty is TEXT.
	Type ColumnType
	// Primary makes the column the table's primary key (always unique and
	// not null). Only CreateTable accepts it.
	Primary bool
	// NotNull forbids NULL; columns are nullable by default.
	NotNull bool
	// Unique forbids duplicate values.
	Unique bool
	// Default is the value of the column when an insert gives none: a
	// scalar fitting the type, or nil for none.
	Default any
}

// Update is one field of an update request: the zero Update leaves the
// field as it is, a set Update (Set true) sets it to To, which may be the
// zero value (nil for pointers: clear). Decoded from JSON, a field that is
// present, null included, is set.
type Update[T any] struct {
	Set bool
	To  T
}

// SetTo returns an Update that sets a field to v.
func SetTo[T any](v T) Update[T] { return Update[T]{Set: true, To: v} }

// UnmarshalJSON marks the change as set and decodes its value, keeping
// numbers exact (an int64 default survives). null is accepted only where T
// can hold it (pointers, interfaces, maps, slices); null for a boolean or a
// string is ErrInvalidRequest, not a silent false or "".
func (c *Update[T]) UnmarshalJSON(b []byte) error {
	c.Set = true
	if string(b) == "null" {
		switch t := reflect.TypeFor[T](); t.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		default:
			return errorf(ErrInvalidRequest, "null is not a valid %s value", t)
		}
	}
	return decodeJSONValue(b, &c.To)
}

// TableUpdate lists the changes to a table; unset fields stay as they are.
type TableUpdate struct {
	// DisplayName sets the display name; set to nil to clear it.
	DisplayName Update[*string] `json:"display_name"`
}

const maxColumns = 500

var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// foldName is the form of a table or column name under which the schema
// finds it: ASCII letters lower-cased, as SQLite matches names. Other
// characters stay as they are, so that no reference outside the name
// alphabet (the Kelvin sign, which Unicode lower-cases to "k") finds a name.
func foldName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

// isReserved reports whether a name belongs to the service or to SQLite.
func isReserved(name string) bool {
	l := strings.ToLower(name)
	return strings.HasPrefix(l, "_pd_") || strings.HasPrefix(l, "sqlite_")
}

// checkName validates a table or column name before it reaches any SQL.
func checkName(code Code, what, name string) error {
	if !identPattern.MatchString(name) || isReserved(name) {
		return errorf(code, "%s %.80q must match ^[A-Za-z_][A-Za-z0-9_]{0,62}$ and not start with _pd_ or sqlite_", what, name)
	}
	return nil
}

// shadowsFunction reports whether a table of this name would hide one of
// SQLite's table-valued functions from the project's queries.
func shadowsFunction(name string) bool {
	return eponymousTables[strings.ToLower(name)] || isPragmaFunction(name)
}

// quoteIdent quotes a checked identifier.
func quoteIdent(name string) string { return sqlite3.QuoteIdentifier(name) }

// schema is a project's registry of application tables, as loaded from the
// control tables. A loaded schema is immutable; a change loads a new one.
type schema struct {
	version int64                 // the registry version it was loaded at
	tables  []*tableInfo          // by id
	byName  map[string]*tableInfo // lower-case name
	byID    map[int64]*tableInfo
	objects map[string]bool // lower-case names of every table and view in the database, ours or not; nil until read (see cacheObjects)
}

// tableInfo is one application table with its columns.
type tableInfo struct {
	Table
	quoted  string
	columns []*columnInfo // by position
	byName  map[string]*columnInfo
	byID    map[int64]*columnInfo
	pk      *columnInfo
	keys    rowKeys // the row's JSON keys (rowjson.go)

	// lastShape is the statement of the table's last planned insert:
	// most inserts give their rows the same columns as the one before.
	lastShape atomic.Pointer[insertShape]
	// images are the encoded parts of the table's row images (imageParts).
	images atomic.Pointer[tableImages]
}

// columnInfo is one column with its quoted name.
type columnInfo struct {
	Column
	quoted string
}

// lookupTable finds a table by numeric id or name (case-insensitive).
func (sc *schema) lookupTable(ref string) (*tableInfo, error) {
	if id, ok := refID(ref); ok {
		if t, ok := sc.byID[id]; ok {
			return t, nil
		}
	} else if t, ok := sc.byName[foldName(ref)]; ok {
		return t, nil
	}
	return nil, errorf(ErrTableNotFound, "table %.80q does not exist", ref)
}

// refID returns the numeric id a table or column reference names, if it
// is a number. A name (which starts with a letter or an underscore) is not
// parsed: a failed parse allocates its error, on every request.
func refID(ref string) (int64, bool) {
	if ref == "" || !('0' <= ref[0] && ref[0] <= '9' || ref[0] == '-' || ref[0] == '+') {
		return 0, false
	}
	id, err := strconv.ParseInt(ref, 10, 64)
	return id, err == nil
}

// lookupColumn finds a column by numeric id or name (case-insensitive).
func (t *tableInfo) lookupColumn(ref string) (*columnInfo, error) {
	if id, ok := refID(ref); ok {
		if c, ok := t.byID[id]; ok {
			return c, nil
		}
	} else if c, ok := t.byName[foldName(ref)]; ok {
		return c, nil
	}
	return nil, errorf(ErrColumnNotFound, "column %.80q does not exist in table %q", ref, t.Name)
}

// columnList returns the table's columns.
func (t *tableInfo) columnList() []Column {
	cols := make([]Column, len(t.columns))
	for i, c := range t.columns {
		cols[i] = c.Column
	}
	return cols
}

func timeOrZero(st *sqlite3.Stmt, col int) Timestamp {
	if t := columnTime(st, col); t != nil {
		return *t
	}
	return Timestamp{}
}

// schemaFor returns the project's registry as c's transaction sees it:
// the cached one when its version is the one stored in the database, else
// one loaded through c. c must be inside a transaction (a reader in
// readSchema or read, or the writer in write), so the version and the
// registry come from the snapshot the caller's statements read. A registry
// loaded while c changes it (inside writeSchema) is not cached: it may
// never commit.
//
// Where c keeps the version for its transaction (see conn.keepVersion), it
// is read once: a reader's for its read transaction, parked or not, and the
// writer's for a group of writes (see runGroup), whose writes would each
// read the same version again.
func (p *project) schemaFor(c *conn) (*schema, error) {
	if c.versionRead && !c.changingRegistry {
		return p.schemaAt(c, c.version)
	}
	v, err := registryVersion(c)
	if err != nil {
		return nil, err
	}
	if c.keepsVersion && !c.changingRegistry {
		c.version, c.versionRead = v, true
	}
	return p.schemaAt(c, v)
}

// schemaAt is schemaFor with the registry version v already read in c's
// transaction.
func (p *project) schemaAt(c *conn, v int64) (*schema, error) {
	sc := p.cachedSchema()
	if sc != nil && sc.version == v && !c.changingRegistry {
		if sc.objects == nil { // a schema change's, see writeSchema
			return p.cacheObjects(c, sc)
		}
		return sc, nil
	}
	sc, err := loadSchema(c)
	if err != nil {
		return nil, err
	}
	sc.version = v
	if !c.changingRegistry {
		p.cacheSchema(sc)
	}
	return sc, nil
}

// cacheObjects returns sc, the cached registry a schema change left
// without its objects, with them, read through c at sc's version; the
// result replaces sc in the cache.
func (p *project) cacheObjects(c *conn, sc *schema) (*schema, error) {
	objects, err := schemaObjects(c)
	if err != nil {
		return nil, err
	}
	full := *sc
	full.objects = objects
	p.schemaMu.Lock()
	if p.schema == sc {
		p.schema = &full
	}
	p.schemaMu.Unlock()
	return &full, nil
}

// cacheSchema makes sc the cached registry, unless the cached one is as
// new or newer.
func (p *project) cacheSchema(sc *schema) {
	p.schemaMu.Lock()
	if p.schema == nil || p.schema.version < sc.version {
		p.schema = sc
	}
	p.schemaMu.Unlock()
}

// registryVersionSQL is registryVersion's statement.
const registryVersionSQL = `SELECT version FROM _pd_registry WHERE id = 1`

// registryVersion reads the registry's version, which every change of the
// registry or of the application schema raises in its own transaction.
func registryVersion(c *conn) (v int64, err error) {
	found, err := c.queryRow(registryVersionSQL, nil, func(st *sqlite3.Stmt) error {
		v = st.ColumnInt64(0)
		return nil
	})
	if err == nil && !found {
		err = errors.New("registry version row missing")
	}
	return v, err
}

// cachedSchema returns the cached registry, nil when there is none. It
// may be stale: schemaFor and readByKey check its version.
func (p *project) cachedSchema() *schema {
	p.schemaMu.Lock()
	defer p.schemaMu.Unlock()
	return p.schema
}

// invalidateSchema drops the cached registry, for a schema changed behind
// the registry's back (see readSchema).
func (p *project) invalidateSchema() {
	p.schemaMu.Lock()
	p.schema = nil
	p.schemaMu.Unlock()
}

// readSchema runs fn on a reader, inside one read transaction, with the
// project's registry as of that transaction's snapshot. A schema changed
// behind the registry's back (by hand, without raising its version) makes
// fn's statements fail with SQLite's ERROR or SCHEMA code (our own SQL has
// no other reason to); then the registry is reloaded and fn runs once more.
func (p *project) readSchema(ctx context.Context, fn func(c *conn, sc *schema) error) error {
	err := p.readSchemaOnce(ctx, fn)
	if errors.Is(err, sqlite3.ERROR) || errors.Is(err, sqlite3.SCHEMA) {
		p.invalidateSchema()
		err = p.readSchemaOnce(ctx, fn)
	}
	return err
}

func (p *project) readSchemaOnce(ctx context.Context, fn func(c *conn, sc *schema) error) error {
	return p.read(ctx, func(c *conn) error {
		// A parked transaction (see project.read) read its version
		// already: the same snapshot has the same registry.
		sc, err := p.schemaFor(c)
		if err != nil {
			return err
		}
		return fn(c, sc)
	})
}

// nameInUse reports whether any schema object (table, index, view,
// trigger) has the name, case-insensitively.
func nameInUse(c *conn, name string) (bool, error) {
	return c.queryRow(`SELECT 1 FROM sqlite_schema WHERE name = ? COLLATE NOCASE`, []any{name}, func(*sqlite3.Stmt) error { return nil })
}

// CreateTable creates an application table with its columns and returns it
// with the columns as stored. Without a primary key column the table gets
// "id INTEGER PRIMARY KEY" (auto-assigned) first.
//
// Errors: ErrInvalidTableName, ErrInvalidColumnName, ErrInvalidColumnType,
// ErrInvalidColumnValue (a default that does not fit), ErrColumnExists (a
// name twice), ErrInvalidRequest (two primary keys, too many columns),
// ErrTableExists, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) CreateTable(ctx context.Context, slug string, def TableDef) (Table, []Column, error) {
	var (
		table Table
		cols  []Column
	)
	err := s.withWrite(ctx, slug, writeCall{op: OpCreateTable, args: []any{def}, results: []any{&table, &cols}}, func(ctx context.Context, p *project) error {
		defs, err := checkTableDef(def)
		if err != nil {
			return err
		}
		return p.writeSchema(ctx, func(c *conn, _ *schema) error {
			taken, err := nameInUse(c, def.Name)
			if err != nil {
				return err
			}
			if taken {
				return errorf(ErrTableExists, "a table or index named %q already exists", def.Name)
			}
			now := s.now()
			if err := c.db.Exec(createTableSQL(def.Name, defs)); err != nil {
				return err
			}
			// Records of a deleted table of this name are folded (dropped)
			// before the name is taken again.
			if err := foldRowCounts(c); err != nil {
				return err
			}
			if err := c.exec(`INSERT INTO _pd_tables (name, display_name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
				def.Name, optString(def.DisplayName), now, now); err != nil {
				return err
			}
			tableID := c.db.LastInsertRowID()
			if err := c.exec(`INSERT INTO _pd_row_counts (table_id, row_count) VALUES (?, 0)`, tableID); err != nil {
				return err
			}
			for i, col := range defs {
				if err := insertColumnRow(c, tableID, i, col, now); err != nil {
					return err
				}
			}
			t, err := c.reloadTable(tableID)
			if err != nil {
				return err
			}
			table, cols = t.Table, t.columnList()
			return nil
		})
	})
	return table, cols, err
}

// columnSpec is a validated column definition.
type columnSpec struct {
	Name     string
	Type     colType
	Primary  bool
	Nullable bool
	Unique   bool
	Default  any // converted: nil, int64, float64 or string
}

// checkTableDef validates a table definition and returns its columns, the
// automatic primary key included.
func checkTableDef(def TableDef) ([]columnSpec, error) {
	if err := checkName(ErrInvalidTableName, "table name", def.Name); err != nil {
		return nil, err
	}
	if shadowsFunction(def.Name) {
		return nil, errorf(ErrInvalidTableName, "table name %q is taken by an SQLite table-valued function (json_each, json_tree, jsonb_each, jsonb_tree, generate_series, pragma_*)", def.Name)
	}
	if err := checkDisplayName(def.DisplayName); err != nil {
		return nil, err
	}
	if len(def.Columns) > maxColumns {
		return nil, errorf(ErrInvalidRequest, "a table has at most %d columns", maxColumns)
	}
	var specs []columnSpec
	seen := map[string]bool{}
	primaries := 0
	for _, cd := range def.Columns {
		spec, err := checkColumnDef(cd)
		if err != nil {
			return nil, err
		}
		if seen[strings.ToLower(spec.Name)] {
			return nil, errorf(ErrColumnExists, "column %q is defined twice", spec.Name)
		}
		seen[strings.ToLower(spec.Name)] = true
		if spec.Primary {
			primaries++
		}
		specs = append(specs, spec)
	}
	switch {
	case primaries > 1:
		return nil, errorf(ErrInvalidRequest, "a table has exactly one primary key column; %d were given", primaries)
	case primaries == 0:
		if seen["id"] {
			return nil, errorf(ErrInvalidRequest, `column "id" is taken by the automatic primary key; mark a primary key column or rename "id"`)
		}
		auto, err := checkColumnDef(ColumnDef{Name: "id", Type: TypeInteger, Primary: true})
		if err != nil {
			return nil, err
		}
		specs = append([]columnSpec{auto}, specs...)
		if len(specs) > maxColumns {
			return nil, errorf(ErrInvalidRequest, `a table has at most %d columns, the automatic primary key "id" included`, maxColumns)
		}
	}
	return specs, nil
}

// checkColumnDef validates one column definition.
func checkColumnDef(cd ColumnDef) (columnSpec, error) {
	if err := checkName(ErrInvalidColumnName, "column name", cd.Name); err != nil {
		return columnSpec{}, err
	}
	typ, err := parseColumnType(cd.Type)
	if err != nil {
		return columnSpec{}, err
	}
	def, err := checkDefault(typ, cd.Default)
	if err != nil {
		return columnSpec{}, errors.WithMessagef(err, "default of column %q", cd.Name)
	}
	spec := columnSpec{Name: cd.Name, Type: typ, Primary: cd.Primary, Nullable: !cd.NotNull && !cd.Primary, Unique: cd.Unique || cd.Primary, Default: def}
	return spec, checkKeyDefault(spec)
}

// checkKeyDefault refuses a default on an INTEGER primary key: SQLite
// assigns that key itself (the rowid) when a row has none, whatever its
// DEFAULT says, so the column would show a default no row ever gets.
func checkKeyDefault(spec columnSpec) error {
	if spec.Primary && spec.Type == TypeInteger && spec.Default != nil {
		return errorf(ErrInvalidColumnValue, "column %q is an INTEGER primary key: SQLite assigns it to a row without one, so it takes no default", spec.Name)
	}
	return nil
}

// maxDefaultBytes bounds a column's default: it lives in the table's SQL,
// which every schema change parses and every table listing returns.
const maxDefaultBytes = 4096

// checkDefault converts a column's default to its type, and bounds it.
func checkDefault(typ colType, v any) (any, error) {
	def, err := typ.convert(v)
	if err != nil {
		return nil, err
	}
	if s, ok := def.(string); ok && len(s) > maxDefaultBytes { // converted, every default is a scalar or text
		return nil, errorf(ErrInvalidColumnValue, "a default is at most %d bytes; this one is %d", maxDefaultBytes, len(s))
	}
	return def, nil
}

// columnSQL is a column's definition in CREATE TABLE. The name was checked
// and is quoted; the default is a converted value rendered as a literal.
func columnSQL(c columnSpec) string {
	var b strings.Builder
	b.WriteString(quoteIdent(c.Name))
	b.WriteString(" ")
	b.WriteString(string(c.Type))
	switch {
	case c.Primary && c.Type == TypeInteger:
		b.WriteString(" PRIMARY KEY") // the rowid: auto-assigned, never NULL
	case c.Primary:
		b.WriteString(" PRIMARY KEY NOT NULL")
	default:
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
		if c.Unique {
			b.WriteString(" UNIQUE")
		}
	}
	if c.Default != nil {
		b.WriteString(" DEFAULT ")
		b.WriteString(sqlLiteral(c.Default))
	}
	return b.String()
}

// createTableSQL is the CREATE TABLE statement of a table.
func createTableSQL(name string, cols []columnSpec) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = columnSQL(c)
	}
	return "CREATE TABLE " + quoteIdent(name) + " (" + strings.Join(parts, ", ") + ")"
}

// insertColumnRow registers a column in _pd_columns.
func insertColumnRow(c *conn, tableID int64, position int, col columnSpec, now any) error {
	def, err := defaultJSON(col.Default)
	if err != nil {
		return err
	}
	return c.exec(`INSERT INTO _pd_columns (table_id, position, name, type, is_nullable, default_value, is_primary, is_unique, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tableID, position, col.Name, string(col.Type), col.Nullable, def, col.Primary, col.Unique, now, now)
}

// defaultJSON encodes a converted default for _pd_columns (nil: none).
func defaultJSON(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func optString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// ListTables lists the project's application tables, by id.
//
// Errors: ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) ListTables(ctx context.Context, slug string) ([]Table, error) {
	tables := []Table{}
	err := s.withProject(ctx, slug, OpListTables, func(p *project) error {
		return p.readSchema(ctx, func(_ *conn, sc *schema) error {
			for _, t := range sc.tables {
				tables = append(tables, t.Table)
			}
			return nil
		})
	})
	return tables, err
}

// GetTable returns a table by numeric id or name.
//
// Errors: ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) GetTable(ctx context.Context, slug, table string) (Table, error) {
	var out Table
	err := s.withProject(ctx, slug, OpListTables, func(p *project) error {
		return p.readSchema(ctx, func(_ *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err == nil {
				out = t.Table
			}
			return err
		})
	})
	return out, err
}

const maxDisplayNameLen = 200

// checkDisplayName checks a table's display name; nil is none.
func checkDisplayName(d *string) error {
	if d != nil && len(*d) > maxDisplayNameLen {
		return errorf(ErrInvalidRequest, "display_name must be at most %d bytes", maxDisplayNameLen)
	}
	return nil
}

// UpdateTable changes a table's display name (by numeric id or name).
//
// Errors: ErrTableNotFound, ErrInvalidRequest (display name too long),
// ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) UpdateTable(ctx context.Context, slug, table string, upd TableUpdate) (Table, error) {
	var out Table
	err := s.withWrite(ctx, slug, writeCall{op: OpUpdateTable, args: []any{table, upd}, results: []any{&out}}, func(ctx context.Context, p *project) error {
		if err := checkDisplayName(upd.DisplayName.To); err != nil { // nil when not set
			return err
		}
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			out = t.Table
			if !upd.DisplayName.Set {
				return nil
			}
			now := s.now()
			if err := c.exec(`UPDATE _pd_tables SET display_name = ?, updated_at = ? WHERE id = ?`, optString(upd.DisplayName.To), now, t.ID); err != nil {
				return err
			}
			out.DisplayName, out.UpdatedAt = upd.DisplayName.To, Timestamp{now}
			_, err = c.reloadTable(t.ID)
			return err
		})
	})
	return out, err
}

// DeleteTable drops an application table (by numeric id or name) with its
// rows, column metadata and indexes, and returns its name.
//
// Errors: ErrForbidden for the service's own and SQLite's tables,
// ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) DeleteTable(ctx context.Context, slug, table string) (string, error) {
	var name string
	err := s.withWrite(ctx, slug, writeCall{op: OpDeleteTable, args: []any{table}, results: []any{&name}}, func(ctx context.Context, p *project) error {
		if isReserved(table) {
			return errorf(ErrForbidden, "table %.80q belongs to the service and cannot be deleted", table)
		}
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			if err := c.db.Exec(`DROP TABLE ` + t.quoted); err != nil {
				return err
			}
			name = t.Name
			if err := c.exec(`DELETE FROM _pd_tables WHERE id = ?`, t.ID); err != nil { // cascades to columns and indexes
				return err
			}
			_, err = c.reloadTable(t.ID)
			return err
		})
	})
	return name, err
}
