package projectdata

import (
	"context"
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
