package projectdata

import (
	"crypto/rand"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Row counts: an unfiltered total costs one lookup and a short scan
// instead of a COUNT(*) over the table. _pd_row_counts holds the number of
// rows of every application table as of change id A
// (_pd_row_counts_as_of); a table's total is its stored count plus the
// deltas of the insert and delete records after A that name it. Every
// operation that changes rows logs them in its own transaction, so the
// total is exact in every snapshot, for every connection, with nothing
// kept outside the database; a single-row insert with the log on writes
// no count page of its own (one WAL frame less per commit).
//
// The deltas are folded into the stored counts (A moves to the newest id)
// now and then by the writer (every foldEvery records it logs), and
// before anything that would break the sum: pruning or restarting the log
// (which delete records), counting a table afresh, and creating a table
// (a new table must not inherit the records of a deleted one of the same
// name; the fold drops those, whose table is gone). With the log off
// (benchmarks), no record is written and the stored count changes instead.

// rowCountsAsOfSchema is the control schema's version 7: the change id the
// stored counts are as of; the counts of a database of an earlier version
// include every change it logged.
const rowCountsAsOfSchema = `
CREATE TABLE _pd_row_counts_as_of (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	change_id INTEGER NOT NULL
);
INSERT INTO _pd_row_counts_as_of (id, change_id) VALUES (1, coalesce((SELECT max(last_id) FROM _pd_changes), 0));
`

// foldEvery is how many log records a writer appends between two folds of
// their deltas into the stored counts. It bounds the records a total sums
// (fewer than foldEvery per writing Store, but for folds rolled back with
// their write): each costs about 0.15 us of a list's total (measured: 10
// us with 63 records pending), while a fold costs a scan of them, an update
// per table they name and of the change id, and the two pages written,
// shared by the records it folds.
const foldEvery = 32

// changeDeltaSQL is the change of a table's row count that a log record
// makes.
const changeDeltaSQL = `CASE op WHEN 'insert' THEN count WHEN 'delete' THEN -count ELSE 0 END`

// addRowCount records that the rows of t changed by delta. It runs on the
// writer inside the operation that changed them. With the log on, the
// operation's own records carry the delta: nothing is written. A table
// without a count (never expected: tables get one at creation or on open)
// is counted afresh, which already includes the change.
func addRowCount(c *conn, t *tableInfo, delta int64) error {
	if delta == 0 || !c.changes.off {
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

// countRows sets the count of a table from COUNT(*) over it, after folding
// the log's deltas: COUNT(*) already includes them.
func countRows(c *conn, tableID int64, quoted string) error {
	if err := foldRowCounts(c); err != nil {
		return err
	}
	return c.exec(`INSERT OR REPLACE INTO _pd_row_counts (table_id, row_count) SELECT ?, count(*) FROM `+quoted, tableID)
}

// foldRowCounts adds the deltas of the log records after the counts' change
// id to the stored counts, and moves that id to the newest record. Records
// of a deleted table, whose name no table has, are dropped. It runs on the
// writer, inside a transaction. The deltas are summed in Go: the records
// are few, and one plain scan cost a fraction of an UPDATE … FROM a
// grouped subquery.
func foldRowCounts(c *conn) error {
	c.unfolded = 0
	type tableDelta struct {
		name  string
		delta int64
	}
	var (
		deltas []tableDelta
		newest int64
	)
	err := c.query(`SELECT last_id, table_name, `+changeDeltaSQL+` FROM _pd_changes
		WHERE last_id > (SELECT change_id FROM _pd_row_counts_as_of)`, nil, func(st *sqlite3.Stmt) error {
		newest = st.ColumnInt64(0)
		d := st.ColumnInt64(2)
		if d == 0 {
			return nil
		}
		name := st.ColumnRawText(1)
		for i := range deltas {
			if deltas[i].name == string(name) { // a table's records all carry its name as stored
				deltas[i].delta += d
				return nil
			}
		}
		deltas = append(deltas, tableDelta{string(name), d})
		return nil
	})
	if err != nil || newest == 0 {
		return errors.WithMessage(err, "fold row counts")
	}
	for _, d := range deltas {
		if err := c.exec(`UPDATE _pd_row_counts SET row_count = row_count + ? WHERE table_id = (SELECT id FROM _pd_tables WHERE name = ?)`, d.delta, d.name); err != nil {
			return errors.WithMessage(err, "fold row counts")
		}
	}
	return errors.WithMessage(c.exec(`UPDATE _pd_row_counts_as_of SET change_id = ? WHERE id = 1`, newest), "fold row counts")
}

// rowCount reads the count of t's rows: its stored count plus the deltas
// of the records after the counts' change id, in one statement (one
// snapshot); ok is false when t has none.
func rowCount(c *conn, t *tableInfo) (n int64, ok bool, err error) {
	ok, err = c.queryRow(`SELECT row_count + coalesce((SELECT sum(`+changeDeltaSQL+`) FROM _pd_changes
			WHERE last_id > (SELECT change_id FROM _pd_row_counts_as_of) AND table_name = ?2 COLLATE NOCASE), 0)
		FROM _pd_row_counts WHERE table_id = ?1`, []any{t.ID, t.Name}, func(st *sqlite3.Stmt) error {
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
