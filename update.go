package projectdata

import (
	"context"
	"slices"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// UpdateRecord sets the columns of data in the row of a table whose
// primary key is id (as in GetRecord) and returns the row after the
// update. The values are checked as an insert's are; data may change the
// key itself.
//
// Errors: ErrInvalidRequest (empty data, a column given twice),
// ErrColumnNotFound, ErrInvalidColumnValue, ErrUniqueViolation,
// ErrNotNullViolation, ErrRecordNotFound, ErrQueryResultTooLarge (the row
// after the update would take more than Options.QueryMaxBytes of JSON: the
// update is not made), ErrTableNotFound, ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) UpdateRecord(ctx context.Context, slug, table string, id any, data Row) (Row, error) {
	rec, err := s.UpdateFoundRecord(ctx, slug, table, id, data)
	return rec.Row, err
}

// UpdateFoundRecord is UpdateRecord that also returns the table's name as
// stored, whatever the spelling or id the table was given by (as
// FindRecord is to GetRecord).
//
// Errors: as UpdateRecord.
func (s *Store) UpdateFoundRecord(ctx context.Context, slug, table string, id any, data Row) (Record, error) {
	var rec Record
	call := writeCall{op: OpUpdateRecord, args: []any{table, id, data}, results: []any{&rec.Row, &rec.Table}}
	err := s.withWrite(ctx, slug, call, func(ctx context.Context, p *project) error {
		if len(data) == 0 {
			return errorf(ErrInvalidRequest, "the body must be a non-empty object of column name to new value")
		}
		return p.write(ctx, func(c *conn) error {
			sc, err := p.schemaFor(c)
			if err != nil {
				return err
			}
			t, k, err := tableAndKey(sc, table, id)
			if err != nil {
				return err
			}
			rec.Table = t.Name
			vals, err := t.rowValues(data, nil)
			if err != nil {
				return err
			}
			var sql strings.Builder
			args, setsKey, err := t.writeUpdateSet(&sql, vals, make([]any, 0, len(vals)+1))
			if err != nil {
				return err
			}
			sql.WriteString(" WHERE ")
			sql.WriteString(t.pk.quoted)
			sql.WriteString(" = ? RETURNING ")
			for i, col := range t.columns {
				if i > 0 {
					sql.WriteString(", ")
				}
				sql.WriteString(col.quoted)
			}
			args = append(args, k)
			scratch := make([]any, len(t.columns))
			found, err := c.queryRow(sql.String(), args, func(st *sqlite3.Stmt) (err error) {
				if err := t.checkRowBudget(st, s.opts.QueryMaxBytes); err != nil {
					return err // rolls the update back: its answer is the row
				}
				rec.Row, err = t.scanRow(st, scratch)
				return err
			})
			if err != nil {
				err = dbError(ctx, err)
				if ErrorCode(err) != ErrInternal {
					err = errors.WithMessagef(err, "table %q", t.Name)
				}
				return err
			}
			if !found {
				return recordNotFound(t, k)
			}
			w := newImageWriter(t, nil)
			w.add(scratch) // the row after the update, in column order
			newKey := k
			if setsKey {
				newKey = scratch[slices.Index(t.columns, t.pk)]
			}
			return c.logUpdated(t, k, newKey, w)
		})
	})
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// writeUpdateSet writes "UPDATE <table> SET <col> = ?, …" for the checked
// values vals to sql and returns args with their values appended, and
// whether they set the primary key. NULL for the primary key or a NOT
// NULL column is ErrNotNullViolation naming the column, whether or not a
// row would change (SQLite refuses it to an INTEGER key as a mismatch, and
// names no column in the message it returns).
func (t *tableInfo) writeUpdateSet(sql *strings.Builder, vals []colValue, args []any) ([]any, bool, error) {
	setsKey := false
	sql.WriteString("UPDATE ")
	sql.WriteString(t.quoted)
	for i, cv := range vals {
		switch {
		case !cv.val.isNull():
		case cv.col == t.pk:
			return nil, false, errorf(ErrNotNullViolation, "column %q is the primary key of table %q: it must not be NULL", cv.col.Name, t.Name)
		case !bool(cv.col.IsNullable):
			return nil, false, errorf(ErrNotNullViolation, "column %q of table %q must not be NULL", cv.col.Name, t.Name)
		}
		if i == 0 {
			sql.WriteString(" SET ")
		} else {
			sql.WriteString(", ")
		}
		sql.WriteString(cv.col.quoted)
		sql.WriteString(" = ?")
		args = append(args, cv.val.any())
		setsKey = setsKey || cv.col == t.pk
	}
	return args, setsKey, nil
}
