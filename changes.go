package projectdata

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Change is one committed change of a project's change log (CONTRACT §12).
type Change struct {
	// ID is the change's place in the log: strictly increasing in commit
	// order, without gaps.
	ID int64
	// Table is the application table's name; empty only for the schema
	// change that starts the log of a restored project (see
	// Store.RestoreProject), which replaced the whole database.
	Table string
	// Op is ChangeInsert, ChangeUpdate, ChangeDelete or ChangeSchema. A
	// schema change stands for its table's rows, which it does not log one
	// by one: the table was created, deleted (its rows went without delete
	// changes), or reshaped (a column added with its default, renamed or
	// retyped, or the table rebuilt), so a follower reads the table anew. Index and display-name changes touch no row and log
	// nothing.
	Op string
	// Key is the row's primary key value; nil for a schema change.
	Key any
	// Row is the row after the change; nil for a delete or schema change.
	Row Row
	// At is when the change's transaction ran, in UTC to the millisecond.
	At time.Time

	encoded []byte // the JSON form, made once for every stream that sends it
}

// MarshalJSON encodes the change as {id, table, op, key, row, at}.
func (c Change) MarshalJSON() ([]byte, error) {
	if c.encoded != nil {
		return c.encoded, nil
	}
	return c.encode()
}

// jsonSize is the length of the change's JSON (see encode), counted
// without encoding it, as encodedSize counts a row: what holds a page of
// the log to the result budget.
func (c Change) jsonSize() int {
	n := 1 + encodedSize("id", c.ID) + encodedSize("table", c.Table) + encodedSize("op", c.Op) + rowValueSize("key", c.Key)
	n += jsonStringSize("row") + 2 // its colon and comma
	switch {
	case c.Row == nil:
		n += len("null")
	case len(c.Row) == 0:
		n += len("{}")
	default:
		n++ // the opening brace; encodedSize counts each value's comma or the closing brace
		for k, v := range c.Row {
			n += rowValueSize(k, v)
		}
	}
	var at [40]byte
	return n + jsonStringSize("at") + 1 + len(Timestamp{c.At}.AppendJSON(at[:0])) + 1 // the colon, the closing brace
}

func (c Change) encode() ([]byte, error) {
	return json.Marshal(struct {
		ID    int64     `json:"id"`
		Table string    `json:"table"`
		Op    string    `json:"op"`
		Key   changeKey `json:"key"`
		Row   Row       `json:"row"`
		At    Timestamp `json:"at"`
	}{c.ID, c.Table, c.Op, changeKey{c.Key}, c.Row, Timestamp{c.At}})
}

// changeKey is a change's key in its JSON form: as the row's value, a REAL
// key with a fraction or an exponent (2.0, never 2), so that it decodes as
// the row's key does.
type changeKey struct{ v any }

func (k changeKey) MarshalJSON() ([]byte, error) {
	if f, ok := k.v.(float64); ok {
		if b, fits := appendRealJSON(nil, f); fits {
			return b, nil
		}
	}
	return json.Marshal(k.v)
}

// ChangeQuery selects changes of the log.
type ChangeQuery struct {
	// After is the id of the last change already seen; changes with a
	// greater id are returned. Zero: from the start of the log.
	After int64
	// Tables keeps only the changes of these tables (case-insensitive).
	// Empty: every table.
	Tables []string
	// Limit is the most changes returned, clamped to 1..1000. Zero: 100.
	Limit int
	// Passed, if set, is called by FollowChanges (in its iteration) when
	// it has read the log past the last change it yielded, the changes
	// since being of other tables, and waits for more: with the id of the
	// log's last change read. A follower of some tables that resumes from
	// there skips nothing of its tables, and its resume point does not
	// fall behind the log's retention while only other tables change.
	// ListChanges ignores it.
	Passed func(after int64)
	// Following, if set, is called once by FollowChanges (in its
	// iteration) when the iteration holds its place among the token's
	// (Options.MaxChangeStreamsPerToken) and has read the log from After
	// once, which checks After against the retention and the names in
	// Tables (a table that does not exist is no error), before it yields
	// anything. An error found before is
	// yielded instead, and Following is not called: an HTTP stream waits
	// for one or the other to choose its status. ListChanges ignores it.
	Following func()
}

// ChangePage is a page of the change log.
type ChangePage struct {
	Changes []Change `json:"changes"`
	// NextAfter is the After of the next page: the id of the last change
	// returned or, when the page holds every selected change there was,
	// the id of the log's last change.
	NextAfter int64 `json:"next_after"`
}

// maxChangeTables bounds ChangeQuery.Tables.
const maxChangeTables = 100

// check validates and clamps a query.
func (q *ChangeQuery) check() error {
	switch {
	case q.Limit == 0:
		q.Limit = 100
	case q.Limit < 1:
		q.Limit = 1
	case q.Limit > maxListLimit:
		q.Limit = maxListLimit
	}
	if q.After < 0 {
		return errorf(ErrInvalidRequest, "after must be a change id, 0 or more")
	}
	if len(q.Tables) > maxChangeTables {
		return errorf(ErrInvalidRequest, "tables takes at most %d names", maxChangeTables)
	}
	for _, t := range q.Tables {
		if err := checkName(ErrInvalidTableName, "table name", t); err != nil {
			return err
		}
	}
	return nil
}

// ListChanges returns a page of the project's change log, in commit order.
//
// Errors: ErrChangesExpired (After is older than the oldest change kept,
// see Options.ChangeRetention), ErrInvalidRequest (a negative After, too
// many Tables), ErrInvalidTableName, ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) ListChanges(ctx context.Context, slug string, q ChangeQuery) (ChangePage, error) {
	if err := q.check(); err != nil {
		return ChangePage{}, err
	}
	var page ChangePage
	err := s.withProject(ctx, slug, OpListChanges, func(p *project) error {
		return p.read(ctx, func(c *conn) (err error) {
			page, _, err = readChanges(c, q, s.opts.QueryMaxBytes)
			return err
		})
	})
	return page, err
}

// readChanges reads a page of the log through c, inside a read
// transaction; q is checked. The page's changes end before their JSON
// passes maxBytes (the result budget, as a list's rows do), but for the
// first: one change is never split, and the log must go on. full reports
// whether the page ended at q.Limit or the budget, with more changes,
// maybe, after it.
func readChanges(c *conn, q ChangeQuery, maxBytes int) (page ChangePage, full bool, err error) {
	page = ChangePage{Changes: []Change{}, NextAfter: q.After}
	first, last, err := changeBounds(c)
	if err != nil {
		return page, false, err
	}
	if last > 0 && q.After < first-1 {
		return page, false, errorf(ErrChangesExpired, "change %d is older than the oldest change kept (%d): read the data afresh and follow the log from %d", q.After, first, last)
	}
	var sql strings.Builder
	sql.WriteString(`SELECT last_id, count, table_name, op, at, data FROM _pd_changes WHERE last_id > ?`)
	args := []any{q.After}
	if len(q.Tables) > 0 {
		sql.WriteString(` AND lower(table_name) IN (?`)
		sql.WriteString(strings.Repeat(`, ?`, len(q.Tables)-1))
		sql.WriteString(`)`)
		for _, t := range q.Tables {
			args = append(args, strings.ToLower(t))
		}
	}
	sql.WriteString(` ORDER BY last_id LIMIT ?`)
	args = append(args, q.Limit) // every record holds at least one change after q.After
	// The page's JSON so far: the array's opening bracket, then each change
	// with its comma or closing bracket.
	size := 1
	add := func(ch Change) bool {
		if len(page.Changes) >= q.Limit {
			full = true
			return false
		}
		if size += ch.jsonSize() + 1; size > maxBytes && len(page.Changes) > 0 {
			full = true
			return false
		}
		page.Changes = append(page.Changes, ch)
		return true
	}
	// Once the page is full the statement stops: the records after it, up
	// to q.Limit of them and each up to maxChangeRecordBytes, are not read.
	err = c.query(sql.String(), args, func(st *sqlite3.Stmt) error {
		if err := decodeRecord(st, q.After, add); err != nil {
			return err
		}
		if full || len(page.Changes) == q.Limit {
			return errStopRows
		}
		return nil
	})
	if err != nil && err != errStopRows {
		return page, false, err
	}
	if n := len(page.Changes); full || n == q.Limit {
		page.NextAfter = page.Changes[n-1].ID
	} else if last > q.After {
		page.NextAfter = last
	}
	return page, full || len(page.Changes) == q.Limit, nil
}

// changeBounds returns the ids of the oldest and newest changes kept; both
// are zero for an empty log.
func changeBounds(c *conn) (first, last int64, err error) {
	_, err = c.queryRow(`SELECT (SELECT last_id - count + 1 FROM _pd_changes ORDER BY last_id LIMIT 1), (SELECT max(last_id) FROM _pd_changes)`, nil, func(st *sqlite3.Stmt) error {
		first, last = st.ColumnInt64(0), st.ColumnInt64(1)
		return nil
	})
	return first, last, err
}

// decodeRecord passes the changes of the current log record with ids
// greater than after to add, in order, until add reports false.
func decodeRecord(st *sqlite3.Stmt, after int64, add func(Change) (more bool)) error {
	lastID, count := st.ColumnInt64(0), st.ColumnInt64(1)
	table, op := st.ColumnText(2), st.ColumnText(3)
	at, err := parseTime(st.ColumnText(4))
	if err != nil {
		return errors.Wrap(err, "change log time")
	}
	at = at.UTC()
	firstID := lastID - count + 1
	if op == ChangeSchema {
		for id := max(firstID, after+1); id <= lastID; id++ {
			if !add(Change{ID: id, Table: table, Op: op, At: at}) {
				return nil
			}
		}
		return nil
	}
	data := st.ColumnRawText(5)
	if op == ChangeDelete {
		var keys []any
		if err := decodeJSONValue(data, &keys); err != nil || int64(len(keys)) != count {
			return errors.New("change log: malformed delete record")
		}
		for i, k := range keys {
			if n, ok := k.(json.Number); ok {
				k = storedNumber(n)
			}
			if id := firstID + int64(i); id > after {
				if !add(Change{ID: id, Table: table, Op: op, Key: k, At: at}) {
					return nil
				}
			}
		}
		return nil
	}
	var rec struct {
		PK      int      `json:"pk"`
		Columns []string `json:"columns"`
		Rows    [][]any  `json:"rows"`
	}
	if err := decodeJSONValue(data, &rec); err != nil || int64(len(rec.Rows)) != count {
		return errors.New("change log: malformed record")
	}
	for i, vals := range rec.Rows {
		id := firstID + int64(i)
		if id <= after {
			continue
		}
		if len(vals) != len(rec.Columns) {
			return errors.New("change log: malformed row image")
		}
		row := make(Row, len(vals))
		for j, v := range vals {
			if n, ok := v.(json.Number); ok {
				v = storedNumber(n)
			}
			row[rec.Columns[j]] = v
		}
		var key any
		if rec.PK >= 0 && rec.PK < len(vals) {
			key = row[rec.Columns[rec.PK]]
		}
		if !add(Change{ID: id, Table: table, Op: op, Key: key, Row: row, At: at}) {
			return nil
		}
	}
	return nil
}

// storedNumber turns a number of the log back into the value SQLite
// returned: a float64 when written with a fraction or an exponent, else an
// int64.
func storedNumber(n json.Number) any {
	s := string(n)
	if strings.ContainsAny(s, ".eE") {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	return s
}

// changePruneBatch is the most log records one retention transaction
// deletes, and changePruneBytes the most bytes of their data but for the
// first record's, so the writer is never held long: deleting a record
// reads its every overflow page (a record holds up to
// maxChangeRecordBytes), and 500 records of 2 MB rows, 1.2 GB, held it
// for over 2 s from a cold page cache, past QueueTimeout for the writes
// behind it.
const (
	changePruneBatch = 500
	changePruneBytes = 16 << 20
)

// pruneChanges deletes the log records older than Options.ChangeRetention,
// a batch (see changePruneSelect) per transaction, always keeping the newest
// record (so ids never go back). It returns how many records it deleted.
func (s *Store) pruneChanges(ctx context.Context, p *project) (int, error) {
	cutoff := formatTime(s.now().Add(-s.opts.ChangeRetention))
	// A point read first tells whether the oldest record (never the newest) is
	// due, so that a log with nothing to prune never waits for the writer.
	due := false
	err := p.readPoint(ctx, func(c *conn) error {
		_, err := c.queryRow(`SELECT at < ? FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes) ORDER BY last_id LIMIT 1`,
			[]any{cutoff}, func(st *sqlite3.Stmt) error {
				due = st.ColumnBool(0)
				return nil
			})
		return err
	})
	if err != nil || !due {
		return 0, err
	}
	total := 0
	for {
		n, more := 0, false
		err := p.write(ctx, func(c *conn) error {
			var upTo int64
			var err error
			upTo, n, more, err = changePruneSelect(c, cutoff)
			if err != nil || upTo == 0 {
				return err
			}
			if err := foldRowCounts(c); err != nil { // the row counts sum the records deleted
				return err
			}
			return c.exec(`DELETE FROM _pd_changes WHERE last_id <= ?`, upTo)
		})
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// changePruneSelect selects the records the next retention transaction deletes:
// the n records up to last_id upTo (none: zero), in id order, each older
// than cutoff and not the newest, at most changePruneBatch of them and,
// but for the first, changePruneBytes of data. more reports that the batch
// ended at a bound: records after it may be due.
func changePruneSelect(c *conn, cutoff string) (upTo int64, n int, more bool, err error) {
	var size int64
	stop := false // the records are in id order: stop at the first one kept
	// octet_length reads a record's size from its header, not its pages.
	err = c.query(`SELECT last_id, at < ?, coalesce(octet_length(data), 0) FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes) ORDER BY last_id LIMIT ?`,
		[]any{cutoff, changePruneBatch}, func(st *sqlite3.Stmt) error {
			if stop = stop || !st.ColumnBool(1); stop {
				return nil
			}
			if size += st.ColumnInt64(2); n > 0 && size > changePruneBytes {
				stop, more = true, true
				return nil
			}
			upTo = st.ColumnInt64(0)
			n++
			return nil
		})
	return upTo, n, more || n == changePruneBatch, err
}
