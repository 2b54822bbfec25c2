package projectdata

import (
	"crypto/rand"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Row counts: _pd_row_counts holds the number of rows of every application
// table, changed in the same transaction as the rows themselves (inside the
// operation's unit of work on the writer), so an unfiltered total costs one
// lookup instead of a COUNT(*) over the table.

// addRowCount records that the rows of t changed by delta. It runs on the
// writer inside the operation that changed them. A table without a count
// (never expected: tables get one at creation or on open) is counted afresh,
// which already includes the change.
func addRowCount(c *conn, t *tableInfo, delta int64) error {
	if delta == 0 {
		return nil
	}
	if err := c.exec(`UPDATE _pd_row_counts SET row_count = row_count + ? WHERE table_id = ?`, delta, t.ID); err != nil {
		return err
	}
	if c.db.Changes() == 1 {
		return nil
	}
	return countRows(c, t.ID, t.quoted)
}

// countRows sets the count of a table from COUNT(*) over it.
func countRows(c *conn, tableID int64, quoted string) error {
	return c.exec(`INSERT OR REPLACE INTO _pd_row_counts (table_id, row_count) SELECT ?, count(*) FROM `+quoted, tableID)
}

// rowCount reads the kept count of t's rows; ok is false when t has none.
func rowCount(c *conn, t *tableInfo) (n int64, ok bool, err error) {
	ok, err = c.queryRow(`SELECT row_count FROM _pd_row_counts WHERE table_id = ?`, []any{t.ID}, func(st *sqlite3.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	})
	return n, ok, err
}

// ensureRowCounts counts, once, the rows of every registered table that
// has no count yet: the tables of a database made before counts were kept.
// It runs in one transaction on the writer when a project opens.
func ensureRowCounts(c *conn) (err error) {
	type missing struct {
		id     int64
		quoted string
	}
	var tables []missing
	if err := c.query(`SELECT id, name FROM _pd_tables WHERE id NOT IN (SELECT table_id FROM _pd_row_counts)`, nil, func(st *sqlite3.Stmt) error {
		tables = append(tables, missing{st.ColumnInt64(0), quoteIdent(st.ColumnText(1))})
		return nil
	}); err != nil || len(tables) == 0 {
		return err
	}
	tx, err := c.db.BeginImmediate()
	if err != nil {
		return err
	}
	defer tx.End(&err)
	for _, t := range tables {
		if err := countRows(c, t.id, t.quoted); err != nil {
			return errors.Wrap(err, "count rows of an existing table")
		}
	}
	return nil
}

// cursorKey returns the project's key for signing list cursors, made on
// first use and kept in the database, so cursors stay valid across restarts
// and in a copied project.
func cursorKey(c *conn) ([]byte, error) {
	var key []byte
	read := func() (bool, error) {
		return c.queryRow(`SELECT value FROM _pd_secrets WHERE name = 'cursor'`, nil, func(st *sqlite3.Stmt) error {
			key = st.ColumnBlob(0, nil)
			return nil
		})
	}
	found, err := read()
	if err != nil || found {
		return key, err
	}
	fresh := make([]byte, 32)
	rand.Read(fresh)
	if err := c.exec(`INSERT OR IGNORE INTO _pd_secrets (name, value) VALUES ('cursor', ?)`, fresh); err != nil {
		return nil, errors.Wrap(err, "store cursor key")
	}
	if _, err := read(); err != nil {
		return nil, err
	}
	return key, nil
}
