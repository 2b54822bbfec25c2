package projectdata

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Column is a column of an application table. Its ID stays the same across
// renames and table rebuilds.
type Column struct {
	ID           int64      `json:"id"`
	TableName    string     `json:"table_name"`
	Name         string     `json:"column_name"`
	Type         ColumnType `json:"column_type"`
	IsNullable   Bit        `json:"is_nullable"`
	DefaultValue any        `json:"default_value"`
	IsPrimary    Bit        `json:"is_primary"`
	IsUnique     Bit        `json:"is_unique"`
	CreatedAt    Timestamp  `json:"created_at"`
	UpdatedAt    Timestamp  `json:"updated_at"`
}

// Bit is a flag that JSON carries as the integer 0 or 1.
type Bit bool

// MarshalJSON encodes the flag as 0 or 1.
func (b Bit) MarshalJSON() ([]byte, error) {
	if b {
		return []byte("1"), nil
	}
	return []byte("0"), nil
}

// UnmarshalJSON accepts 0, 1, true or false.
func (b *Bit) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "1", "true":
		*b = true
	case "0", "false":
		*b = false
	default:
		return errorf(ErrInvalidRequest, "a flag must be 0, 1, true or false")
	}
	return nil
}

// ListColumns returns a table's columns in order, and the table's name.
//
// Errors: ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) ListColumns(ctx context.Context, slug, table string) (string, []Column, error) {
	var (
		name string
		cols []Column
	)
	err := s.withProject(ctx, slug, OpListColumns, func(p *project) error {
		return p.readSchema(ctx, func(_ *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			name, cols = t.Name, t.columnList()
			return nil
		})
	})
	return name, cols, err
}

// GetColumn returns one column of a table, by numeric id or name.
//
// Errors: ErrTableNotFound, ErrColumnNotFound, ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) GetColumn(ctx context.Context, slug, table, column string) (Column, error) {
	var out Column
	err := s.withProject(ctx, slug, OpGetColumn, func(p *project) error {
		return p.readSchema(ctx, func(_ *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			col, err := t.lookupColumn(column)
			if err == nil {
				out = col.Column
			}
			return err
		})
	})
	return out, err
}

// ColumnUpdate lists the changes to a column; unset fields stay as they
// are. Decoded from JSON, a field that is present is set.
type ColumnUpdate struct {
	// Name renames the column.
	Name Update[string] `json:"new_column_name"`
	// Type changes the type, only while the column has no saved values.
	Type Update[string] `json:"column_type"`
	// Nullable allows or forbids NULL.
	Nullable Update[bool] `json:"is_nullable"`
	// Default sets the default: a scalar fitting the (new) type, or nil for
	// none.
	Default Update[any] `json:"default_value"`
	// Unique forbids or allows duplicate values.
	Unique Update[bool] `json:"is_unique"`
}

// AddColumn adds a column to a table (by numeric id or name) after its last
// column and returns it as stored. The column is TEXT, nullable and not
// unique unless def says otherwise; existing rows get its default. SQLite's
// ALTER TABLE adds a column that is not unique and is nullable or has a
// default; any other column rebuilds the table, keeping its rows, indexes
// and column ids.
//
// Errors: ErrUnsupportedColumnChange (def.Primary: a primary key column
// cannot be added to an existing table), ErrInvalidColumnName,
// ErrInvalidColumnType, ErrInvalidColumnValue (a default that does not
// fit), ErrColumnExists (the name is taken, case-insensitively),
// ErrInvalidColumnChange (NOT NULL without a default while rows exist),
// ErrUniqueViolation (unique with a default while two or more rows exist),
// ErrInvalidRequest (too many columns), ErrTableNotFound,
// ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) AddColumn(ctx context.Context, slug, table string, def ColumnDef) (Column, error) {
	var out Column
	err := s.withWrite(ctx, slug, writeCall{op: OpAddColumn, args: []any{table, def}, results: []any{&out}}, func(ctx context.Context, p *project) error {
		if def.Primary {
			return errorf(ErrUnsupportedColumnChange, "a primary key column cannot be added to an existing table")
		}
		spec, err := checkColumnDef(def)
		if err != nil {
			return err
		}
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			if other, taken := t.byName[foldName(spec.Name)]; taken {
				return errorf(ErrColumnExists, "table %q already has a column %q", t.Name, other.Name)
			}
			if len(t.columns) >= maxColumns {
				return errorf(ErrInvalidRequest, "table %q already has %d columns, the most a table may have", t.Name, maxColumns)
			}
			if err := addColumn(c, t, spec); err != nil {
				return dbError(ctx, err)
			}
			var position int64
			if _, err := c.queryRow(`SELECT coalesce(max(position), -1) + 1 FROM _pd_columns WHERE table_id = ?`, []any{t.ID}, func(st *sqlite3.Stmt) error {
				position = st.ColumnInt64(0)
				return nil
			}); err != nil {
				return err
			}
			if err := insertColumnRow(c, t.ID, int(position), spec, s.now()); err != nil {
				return err
			}
			out, err = storedColumn(c, t.ID, c.db.LastInsertRowID())
			return err
		})
	})
	return out, err
}

// addColumn adds the column spec to table t, with ALTER TABLE where SQLite
// can and by a rebuild where it cannot.
func addColumn(c *conn, t *tableInfo, spec columnSpec) error {
	if !spec.Unique && (spec.Nullable || spec.Default != nil) {
		return c.db.Exec(`ALTER TABLE ` + t.quoted + ` ADD COLUMN ` + columnSQL(spec))
	}
	if !spec.Nullable && spec.Default == nil {
		hasRows, err := exists(c, `SELECT 1 FROM `+t.quoted+` LIMIT 1`)
		if err != nil {
			return err
		}
		if hasRows {
			return errorf(ErrInvalidColumnChange, "table %q has rows: a NOT NULL column %q needs a default for them", t.Name, spec.Name)
		}
	}
	if spec.Unique && spec.Default != nil {
		twoRows, err := exists(c, `SELECT 1 FROM `+t.quoted+` LIMIT 1 OFFSET 1`)
		if err != nil {
			return err
		}
		if twoRows {
			return errorf(ErrUniqueViolation, "unique column %q would hold its default in each of the rows of table %q", spec.Name, t.Name)
		}
	}
	specs, err := t.specs()
	if err != nil {
		return err
	}
	return rebuildTable(c, t, append(specs, spec))
}

// UpdateColumn changes a column of a table (both by numeric id or name) and
// returns it as stored; an update that sets nothing returns it unchanged.
// Its id stays the same, and its updated_at changes when something did.
//
// A rename uses ALTER TABLE RENAME COLUMN, which rewrites the indexes on
// the column. Changing the type, nullability, default or uniqueness
// rebuilds the table in one transaction, keeping every row, every index
// (with its name) and every column id. Whatever fails changes nothing.
//
// The type changes only while no row holds a non-NULL value in the column.
// A primary key column is always unique and not null: setting IsUnique or
// clearing IsNullable on it changes nothing, the opposite and a type change
// are refused. The default is checked against the column's new type.
//
// Errors: ErrInvalidColumnName, ErrColumnExists (the new name is another
// column's), ErrInvalidColumnType, ErrColumnTypeLocked (the column has
// saved values), ErrUnsupportedColumnChange (primary key type, nullable or
// not unique), ErrInvalidColumnChange (NOT NULL while NULLs exist),
// ErrUniqueViolation (unique while duplicates exist),
// ErrInvalidColumnValue (a default that does not fit), ErrColumnNotFound,
// ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) UpdateColumn(ctx context.Context, slug, table, column string, upd ColumnUpdate) (Column, error) {
	var out Column
	err := s.withWrite(ctx, slug, writeCall{op: OpUpdateColumn, args: []any{table, column, upd}, results: []any{&out}}, func(ctx context.Context, p *project) error {
		if upd.Name.Set {
			if err := checkName(ErrInvalidColumnName, "column name", upd.Name.To); err != nil {
				return err
			}
		}
		var typ colType
		if upd.Type.Set {
			if upd.Type.To == "" {
				return errorf(ErrInvalidColumnType, "column_type must be one of TEXT, INTEGER, REAL, NUMERIC, BOOLEAN, DATETIME")
			}
			var err error
			if typ, err = parseColumnType(upd.Type.To); err != nil {
				return err
			}
		}
		return p.writeSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			col, err := t.lookupColumn(column)
			if err != nil {
				return err
			}
			old, err := col.spec()
			if err != nil {
				return err
			}
			if upd.Type.Set && typ != old.Type {
				// A column holding values keeps its type whatever else the
				// update says (a default that fits only the new type).
				retyped := old
				retyped.Type = typ
				if err := checkColumnData(c, t, col, old, retyped); err != nil {
					return err
				}
			}
			next, err := updatedSpec(old, typ, upd)
			if err != nil {
				return err
			}
			newName := col.Name
			if upd.Name.Set {
				newName = upd.Name.To
			}
			if other, taken := t.byName[foldName(newName)]; taken && other.ID != col.ID {
				return errorf(ErrColumnExists, "table %q already has a column %q", t.Name, other.Name)
			}
			if newName == col.Name && next == old {
				out = col.Column
				return nil
			}
			if err := checkColumnData(c, t, col, old, next); err != nil {
				return err
			}
			if err := changeColumn(c, t, col, old, next, newName, s.now()); err != nil {
				return dbError(ctx, err)
			}
			out, err = storedColumn(c, t.ID, col.ID)
			return err
		})
	})
	return out, err
}

// updatedSpec applies an update's type, nullability, default and
// uniqueness to a column's definition (not its name), checking what needs
// no data: the primary key rules and that the default fits the type.
func updatedSpec(old columnSpec, typ colType, upd ColumnUpdate) (columnSpec, error) {
	next := old
	const pkRule = "column %q is the primary key: primary key columns are always unique and not null"
	if upd.Type.Set && typ != old.Type {
		next.Type = typ // the primary key's too, while the table is empty (see checkColumnData)
	}
	if upd.Nullable.Set && !old.Primary {
		next.Nullable = upd.Nullable.To
	} else if upd.Nullable.Set && upd.Nullable.To {
		return next, errorf(ErrUnsupportedColumnChange, pkRule, old.Name)
	}
	if upd.Unique.Set && !old.Primary {
		next.Unique = upd.Unique.To
	} else if upd.Unique.Set && !upd.Unique.To {
		return next, errorf(ErrUnsupportedColumnChange, pkRule, old.Name)
	}
	var err error
	if upd.Default.Set {
		next.Default, err = checkDefault(next.Type, upd.Default.To)
	} else { // the default as it is, maybe in a new type
		next.Default, err = colType(next.Type).convert(old.Default)
	}
	if err != nil {
		return next, errors.WithMessagef(err, "default of column %q", old.Name)
	}
	if upd.Default.Set || upd.Type.Set { // a default stored before it was refused stays
		return next, checkKeyDefault(next)
	}
	return next, nil
}

// checkColumnData checks the rows of table t allow column col to change
// from old to next: no saved values for a type change, no NULL for NOT
// NULL, no duplicates for unique.
func checkColumnData(c *conn, t *tableInfo, col *columnInfo, old, next columnSpec) error {
	from := ` FROM ` + t.quoted + ` WHERE ` + col.quoted
	checks := []struct {
		apply bool
		query string
		err   error
	}{
		{next.Type != old.Type, `SELECT 1` + from + ` IS NOT NULL LIMIT 1`,
			errorf(ErrColumnTypeLocked, "column %q holds values: its type can change only while it has none", col.Name)},
		{old.Nullable && !next.Nullable, `SELECT 1` + from + ` IS NULL LIMIT 1`,
			errorf(ErrInvalidColumnChange, "column %q holds NULL in some rows: give them values before making it NOT NULL", col.Name)},
		{!old.Unique && next.Unique, `SELECT 1` + from + ` IS NOT NULL GROUP BY ` + col.quoted + ` HAVING count(*) > 1 LIMIT 1`,
			errorf(ErrUniqueViolation, "column %q holds the same value in several rows: it cannot be made unique", col.Name)},
	}
	for _, ch := range checks {
		if !ch.apply {
			continue
		}
		found, err := exists(c, ch.query)
		if err != nil {
			return err
		}
		if found {
			return ch.err
		}
	}
	return nil
}

// changeColumn makes a checked change of column col of table t: a rebuild
// when its definition changes from old to next, a rename when newName is
// not its name, or both; then records the column as it is now.
func changeColumn(c *conn, t *tableInfo, col *columnInfo, old, next columnSpec, newName string, now time.Time) error {
	if next != old {
		specs, err := t.specs()
		if err != nil {
			return err
		}
		for i, other := range t.columns {
			if other.ID == col.ID {
				specs[i] = next
			}
		}
		if err := rebuildTable(c, t, specs); err != nil {
			return err
		}
	}
	if newName != col.Name {
		if err := c.db.Exec(`ALTER TABLE ` + t.quoted + ` RENAME COLUMN ` + col.quoted + ` TO ` + quoteIdent(newName)); err != nil {
			return err
		}
	}
	def, err := defaultJSON(next.Default)
	if err != nil {
		return err
	}
	return c.exec(`UPDATE _pd_columns SET name = ?, type = ?, is_nullable = ?, default_value = ?, is_unique = ?, updated_at = ? WHERE id = ?`,
		newName, string(next.Type), next.Nullable, def, next.Unique, now, col.ID)
}

// rebuildTable recreates table t with the columns specs, inside the
// caller's transaction, for the changes ALTER TABLE cannot make. It follows
// SQLite's procedure (https://sqlite.org/lang_altertable.html#otheralter):
// create the new table under a temporary name, copy the rows, save the SQL
// of the table's explicit indexes, drop the old table, rename the new one
// and recreate the indexes under their names.
//
// Every column of specs that t has (by name) is copied; a column that t
// lacks gets its default. The registry's rows (_pd_columns, _pd_indexes)
// are untouched, so column ids and managed indexes stay as they are.
// Application tables have no foreign keys, so none need checking.
func rebuildTable(c *conn, t *tableInfo, specs []columnSpec) error {
	tmpName := "_pd_rebuild_" + strconv.FormatInt(t.ID, 10) // _pd_: no application table has it
	var copied []string
	for _, spec := range specs {
		if col, ok := t.byName[foldName(spec.Name)]; ok {
			copied = append(copied, col.quoted)
		}
	}
	cols := strings.Join(copied, ", ")
	if err := c.db.Exec(createTableSQL(tmpName, specs)); err != nil {
		return err
	}
	if err := c.db.Exec(`INSERT INTO ` + quoteIdent(tmpName) + ` (` + cols + `) SELECT ` + cols + ` FROM ` + t.quoted); err != nil {
		return err
	}
	var indexes []string
	if err := c.query(`SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? COLLATE NOCASE AND sql IS NOT NULL ORDER BY name`,
		[]any{t.Name}, func(st *sqlite3.Stmt) error {
			indexes = append(indexes, st.ColumnText(0))
			return nil
		}); err != nil {
		return err
	}
	if err := c.db.Exec(`DROP TABLE ` + t.quoted); err != nil {
		return err
	}
	if err := c.db.Exec(`ALTER TABLE ` + quoteIdent(tmpName) + ` RENAME TO ` + t.quoted); err != nil {
		return err
	}
	for _, sql := range indexes {
		// SQLite's own text of one CREATE INDEX statement of this table.
		if err := c.db.Exec(sql); err != nil {
			return err
		}
	}
	return nil
}

// specs returns the definitions of the table's columns, in order.
func (t *tableInfo) specs() ([]columnSpec, error) {
	specs := make([]columnSpec, len(t.columns))
	for i, col := range t.columns {
		spec, err := col.spec()
		if err != nil {
			return nil, err
		}
		specs[i] = spec
	}
	return specs, nil
}

// spec returns the column's definition, its default converted again from
// the registry's JSON.
func (col *columnInfo) spec() (columnSpec, error) {
	def, err := colType(col.Type).convert(col.DefaultValue)
	if err != nil {
		return columnSpec{}, errors.Wrapf(err, "stored default of column %q", col.Name)
	}
	return columnSpec{
		Name:     col.Name,
		Type:     colType(col.Type),
		Primary:  bool(col.IsPrimary),
		Nullable: bool(col.IsNullable),
		Unique:   bool(col.IsUnique),
		Default:  def,
	}, nil
}

// exists reports whether a query of ours returns a row.
func exists(c *conn, query string) (bool, error) {
	return c.queryRow(query, nil, func(*sqlite3.Stmt) error { return nil })
}

// storedColumn reads table tableID of the registry again through c (see
// conn.reloadTable) and returns a column of it, as the caller's schema
// change left it.
func storedColumn(c *conn, tableID, columnID int64) (Column, error) {
	t, err := c.reloadTable(tableID)
	if err != nil {
		return Column{}, err
	}
	if t != nil {
		if col, ok := t.byID[columnID]; ok {
			return col.Column, nil
		}
	}
	return Column{}, errors.Errorf("column %d of table %d is not registered", columnID, tableID)
}
