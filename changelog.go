package projectdata

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// The change log (CONTRACT §12) is written by Go, inside the unit of work
// of every operation that changes application rows, on the writer
// connection: insert, delete one, bulk update and delete (and the one-row
// update), plus one schema change per table whose shape a schema
// operation changed (writeSchema). Nothing is buffered outside the
// transaction, so a rolled-back operation leaves no change behind and a
// committed one leaves all of its changes.
//
// Why Go and not SQLite triggers or the pre-update hook: a trigger per row
// doubles the B-tree work of every insert (measured with the raw driver,
// 1,000-row batches: 0.5x with an empty trigger, 0.3x with json_object),
// far below the throughput goal; the pre-update hook cannot write from
// inside the callback, so a 10M-row bulk update would buffer 10M row
// images in memory before commit. Go already holds the values of an
// insert, so the log stores one record per statement chunk (up to
// changeChunk changes) rather than one row per change, which costs about
// one JSON encoding per row.
//
// What keeps a write path from being forgotten: with verifyChangeLog set
// (every test of the package sets it), the writer's update hook counts
// each application row SQLite changes, and a unit of work whose count
// differs from the changes it logged fails and rolls back.

// Change operations.
const (
	ChangeInsert = "insert"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
	ChangeSchema = "schema"
)

// changeChunk is the most changes of one log record; bulk operations work
// in chunks of this many rows, so memory stays bounded whatever they touch.
const changeChunk = 1000

// verifyChangeLog makes every writer check, before commit, that it logged
// exactly the application rows SQLite changed. Tests set it.
var verifyChangeLog = false

// changeCounts is the change-log state of the writer's unit of work.
type changeCounts struct {
	at      time.Time // the unit of work's timestamp, shared by its changes
	atText  string    // at as stored, formatted by the unit's first record
	logged  int64     // row changes logged (schema changes not counted)
	moved   int64     // of which the deletes of keys moved (see logUpdated): no row SQLite changed
	records int       // log records written, schema ones included
	hooked  int64     // application rows SQLite changed (verifyChangeLog only)
	off     bool      // the Store's log is off (benchmarks only)
}

// beginUnit resets the change counts at the start of a unit of work.
func (c *conn) beginUnit(at time.Time, off bool) {
	c.changes = changeCounts{at: at, off: off}
}

// watchChanges installs the update hook of verifyChangeLog on a writer.
func (c *conn) watchChanges() {
	c.db.UpdateHook(func(_ sqlite3.AuthorizerActionCode, _, table string, _ int64) {
		if !isReserved(table) {
			c.changes.hooked++
		}
	})
}

// checkChangeLog fails the unit of work when verifyChangeLog is set and
// SQLite changed other application rows than those logged.
func (c *conn) checkChangeLog() error {
	if !verifyChangeLog || c.changes.off || c.changes.hooked == c.changes.logged-c.changes.moved {
		return nil
	}
	return errors.Errorf("change log: %d application rows changed but %d changes logged", c.changes.hooked, c.changes.logged-c.changes.moved)
}

// logUpdated logs the update of one row of t, whose primary key was
// oldKey and whose image after the update w holds: an update, or, when
// the update moved the row to another key, a delete of the old key and an
// insert of the row under the new one, so that a follower keyed by
// primary key drops the old row (an update under the new key alone would
// leave it).
func (c *conn) logUpdated(t *tableInfo, oldKey, newKey any, w *imageWriter) error {
	if oldKey == newKey {
		return c.appendChange(w.record(ChangeUpdate))
	}
	err := c.appendChange(changeRecord{table: t.Name, op: ChangeDelete, count: 1, data: appendKeys(nil, []any{oldKey})})
	if err != nil {
		return err
	}
	c.changes.moved++
	return c.appendChange(w.record(ChangeInsert))
}

// changeRecord is one record of the log being written: count changes of
// one op on one table, ids lastID-count+1 .. lastID.
type changeRecord struct {
	table string
	op    string
	count int
	data  []byte // the payload (see appendImages, appendKeys); nil for schema
}

// appendChangeSQL appends a log record. One statement reads the newest id
// and appends after it (max of the INTEGER PRIMARY KEY is one seek): a
// separate SELECT cost a statement step per record on the writer's hot
// path. The max is a scalar subquery in VALUES: INSERT … SELECT … FROM the
// same table would make SQLite copy the SELECT into a temporary table
// first, which cost more than the insert of the row it logs.
const appendChangeSQL = `INSERT INTO _pd_changes (last_id, count, table_name, op, at, data)
	VALUES (coalesce((SELECT max(last_id) FROM _pd_changes), 0) + ?1, ?1, ?2, ?3, ?4, ?5)`

// appendOneChangeSQL appends a record of one change: SQLite gives a new
// row the rowid after the largest (the newest id, never removed by
// pruning), so the record's id needs no subquery; the largest rowid that
// would make SQLite pick another at random (2^63-1) is out of reach.
const appendOneChangeSQL = `INSERT INTO _pd_changes (count, table_name, op, at, data) VALUES (?1, ?2, ?3, ?4, ?5)`

// appendChange writes a record to the log, inside c's transaction.
func (c *conn) appendChange(r changeRecord) error {
	if c.changes.off || r.count == 0 {
		return nil
	}
	if c.changes.atText == "" {
		c.changes.atText = formatTime(c.changes.at)
	}
	sql := appendChangeSQL
	if r.count == 1 {
		sql = appendOneChangeSQL
	}
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	// Every parameter is bound for every record, without boxing them in
	// an []any (the statement is reused without clearing its bindings);
	// the payload is unbound after, not to hold its copy in SQLite.
	err = st.BindInt64(1, int64(r.count))
	if err == nil {
		err = st.BindText(2, r.table)
	}
	if err == nil {
		err = st.BindText(3, r.op)
	}
	if err == nil {
		err = st.BindText(4, c.changes.atText)
	}
	if err == nil {
		if r.data != nil {
			err = st.BindText(5, bytesAsString(r.data))
		} else {
			err = st.BindNull(5)
		}
	}
	if err == nil {
		err = st.Exec()
	}
	if r.data != nil {
		st.BindNull(5)
	}
	if err != nil {
		return err
	}
	if r.op != ChangeSchema {
		c.changes.logged += int64(r.count)
	}
	c.changes.records++
	if c.unfolded++; c.unfolded >= foldEvery {
		return foldRowCounts(c)
	}
	return nil
}

// bytesAsString returns a string of the bytes of b, sharing them, for
// Stmt.BindText, which copies its value into SQLite's memory before it
// returns: Stmt.BindRawText copied a large record once more, to the heap
// (a 1,000-row insert's record is some 40 KB), before that. b must not
// change while the string is in use.
func bytesAsString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// imageWriter encodes the row images of one record: {"pk":i,
// "columns":[names],"rows":[[values],…]}, values in column order.
type imageWriter struct {
	t    *tableInfo
	buf  []byte
	rows int
}

func newImageWriter(t *tableInfo, buf []byte) *imageWriter {
	return &imageWriter{t: t, buf: appendImageHead(buf[:0], t)}
}

// appendImageHead appends the start of a record of row images of t, up to
// its first row: {"pk":i,"columns":[names],"rows":[
func appendImageHead(b []byte, t *tableInfo) []byte {
	b = append(b, `{"pk":`...)
	pk := -1
	for i, col := range t.columns {
		if col == t.pk {
			pk = i
		}
	}
	b = strconv.AppendInt(b, int64(pk), 10)
	b = append(b, `,"columns":[`...)
	for i, col := range t.columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHTMLSafeString(b, col.Name)
	}
	return append(b, `],"rows":[`...)
}

// add appends one row image: vals[i] is the value of t.columns[i].
func (w *imageWriter) add(vals []any) {
	if w.rows > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '[')
	for i, v := range vals {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = appendJSONValue(w.buf, v)
	}
	w.buf = append(w.buf, ']')
	w.rows++
}

// record returns the finished record.
func (w *imageWriter) record(op string) changeRecord {
	w.buf = append(w.buf, "]}"...)
	return changeRecord{table: w.t.Name, op: op, count: w.rows, data: w.buf}
}

// appendKeys encodes the keys of a delete record: [key, …].
func appendKeys(buf []byte, keys []any) []byte {
	buf = append(buf[:0], '[')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONValue(buf, k)
	}
	return append(buf, ']')
}

// appendJSONValue encodes a stored value: nil, int64, float64 (always with
// a fraction or an exponent, so it decodes as a float again) or string.
func appendJSONValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		return appendImageFloat(b, v)
	case string:
		return appendHTMLSafeString(b, v)
	case []byte:
		return appendHTMLSafeBytes(b, v)
	}
	return append(b, "null"...)
}

// appendImageFloat appends f as the change log writes a REAL: with a
// fraction or an exponent, so that it reads back as a REAL.
func appendImageFloat(b []byte, f float64) []byte {
	start := len(b)
	ok := false
	if a := math.Abs(f); a >= 1e-4 && a < 1e6 { // where 'g' writes no exponent
		b, ok = appendShortFixed(b, f)
	}
	if !ok {
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'E' || c == 'n' {
			return b
		}
	}
	return append(b, ".0"...)
}

// logInsert logs the rows of an executed insert plan; ids are their keys.
// Each image is the row as stored: the given values (converted as they were
// bound), the columns' defaults for the others, the assigned key. The
// images are those the early plan encoded before the writer (see
// insertimages.go), or encoded here; the writer splices the keys in.
func (pl *insertPlan) logInsert(c *conn, ids []any) error {
	if c.changes.off || len(ids) == 0 {
		return nil
	}
	pl.waitImages()
	im := pl.images
	if im == nil {
		im = newImages()
		defer im.release()
		if err := pl.encodeImages(im); err != nil {
			return err
		}
	}
	t := pl.t
	b := im.rec[:0]
	if need := len(im.head) + len(im.buf) + len(ids)*imageBytesPerKey + 2; cap(b) < need {
		b = make([]byte, 0, need) // sized once, rather than grown row by row
	}
	b = append(b, im.head...)
	first := 0 // the first row of the record being encoded
	for r := range ids {
		if r > first {
			if len(b) >= maxChangeRecordBytes {
				// The rows so far are a record of their own: one record
				// of an insert of large rows would take SQLite's memory.
				b = append(b, "]}"...)
				if err := c.appendChange(changeRecord{table: t.Name, op: ChangeInsert, count: r - first, data: b}); err != nil {
					return err
				}
				b, first = append(b[:0], im.head...), r
			} else {
				b = append(b, ',')
			}
		}
		b = im.appendImage(b, r, ids[r])
	}
	b = append(b, "]}"...)
	im.rec = b
	return c.appendChange(changeRecord{table: t.Name, op: ChangeInsert, count: len(ids) - first, data: b})
}

// imageBytesPerKey is a guess of the bytes of a key and its comma in a
// record, for sizing the record's buffer once.
const imageBytesPerKey = 8

// maxChangeRecordBytes is the size past which the row images of an insert
// or a bulk update go on in another record: one record of large rows
// would take SQLite's memory.
const maxChangeRecordBytes = 4 << 20

// bulkExec runs a bulk update or delete, head (up to its WHERE) and cond
// (its WHERE clause, or empty), and logs the rows it changed. The rows are
// changed changeChunk at a time, in rowid order, each chunk returning its
// rows, so the memory of a bulk change is bounded whatever it touches. An
// update that sets the primary key (which moves a row in rowid order, and
// can succeed for one row only) runs as one statement, and is logged as
// logUpdated logs a key's move; so does a change of a table whose columns
// hide every name of the rowid (see rowidRef). args are head's set first,
// then cond's.
func (c *conn) bulkExec(t *tableInfo, op, head, cond string, args []any, set int, setsKey bool) (int64, error) {
	if c.changes.off {
		if err := c.exec(head+cond, args...); err != nil {
			return 0, err
		}
		return c.db.Changes(), nil
	}
	rowid := t.rowidRef()
	chunked := !setsKey && rowid != ""
	first := rowid // the rowid, which the next chunk starts after; unread when not chunked
	if !chunked {
		first = t.pk.quoted
	}
	returning := ` RETURNING ` + first + `, ` + t.pk.quoted
	if op == ChangeUpdate {
		var b strings.Builder
		b.WriteString(` RETURNING `)
		b.WriteString(first)
		for _, col := range t.columns {
			b.WriteString(`, `)
			b.WriteString(col.quoted)
		}
		returning = b.String()
	}
	var sql, next string // the statement of the first chunk, and of the chunks after it
	var oldKeys []any    // the keys of the rows a key-setting update selects: one, or it fails
	if !chunked {
		sql = head + cond + returning
	}
	if setsKey {
		err := c.query(`SELECT `+t.pk.quoted+` FROM `+t.quoted+cond+` LIMIT 2`, args[set:], func(st *sqlite3.Stmt) error {
			key := make([]any, 1)
			if err := st.Columns(key...); err != nil {
				return err
			}
			oldKeys = append(oldKeys, key[0])
			return nil
		})
		if err != nil {
			return 0, err
		}
	} else if chunked {
		// The first chunk has no lower bound: a rowid may be zero or
		// negative (an INTEGER primary key is the rowid).
		and := ` WHERE `
		if cond != "" {
			and = ` AND `
		}
		chunk := func(bound string) string {
			return head + ` WHERE ` + rowid + ` IN (SELECT ` + rowid + ` FROM ` + t.quoted + cond + bound +
				` ORDER BY ` + rowid + ` LIMIT ` + strconv.Itoa(changeChunk) + `)` + returning
		}
		sql, next = chunk(""), chunk(and+rowid+` > ?`)
		args = append(args, nil) // the bound of next, set once a chunk ran
	}
	var (
		total   int64
		buf     []byte
		keys    []any
		vals    = make([]any, len(t.columns)+1)
		lastRow = len(args) - 1
	)
	for {
		var w *imageWriter
		if op == ChangeUpdate {
			w = newImageWriter(t, buf)
		}
		keys = keys[:0]
		n := 0
		stmtArgs := args
		if chunked && sql != next { // the first chunk: no bound
			stmtArgs = args[:lastRow]
		}
		err := c.query(sql, stmtArgs, func(st *sqlite3.Stmt) error {
			n++
			row := vals
			if op == ChangeDelete {
				row = vals[:2]
			}
			if err := st.Columns(row...); err != nil {
				return err
			}
			if chunked {
				args[lastRow] = row[0] // the rowid: the next chunk starts after it
			}
			if op == ChangeDelete {
				keys = append(keys, row[1])
				if len(keys) < changeChunk {
					return nil
				}
				// A statement not chunked logs changeChunk keys a record.
				buf = appendKeys(buf, keys)
				keys = keys[:0]
				return c.appendChange(changeRecord{table: t.Name, op: ChangeDelete, count: changeChunk, data: buf})
			}
			w.add(row[1:])
			if len(w.buf) >= maxChangeRecordBytes || w.rows >= changeChunk {
				// The images so far are a record of their own, as an
				// insert's (see logInsert).
				if err := c.appendChange(w.record(ChangeUpdate)); err != nil {
					return err
				}
				w = newImageWriter(t, w.buf)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += int64(n)
		if setsKey && op == ChangeUpdate && n == 1 && len(oldKeys) == 1 && w.rows == 1 {
			return total, c.logUpdated(t, oldKeys[0], vals[1+slices.Index(t.columns, t.pk)], w)
		}
		rec := changeRecord{table: t.Name, op: ChangeDelete, count: len(keys)}
		if op == ChangeUpdate {
			rec = w.record(ChangeUpdate)
			buf = rec.data
		} else {
			buf = appendKeys(buf, keys)
			rec.data = buf
		}
		if err := c.appendChange(rec); err != nil {
			return total, err
		}
		if !chunked || n < changeChunk {
			return total, nil
		}
		sql = next
	}
}

// rowidRef is how the table's SQL names its rows' rowid: rowid, _rowid_
// or oid, whichever no column of the table shadows, else an INTEGER
// primary key (which is the rowid), else "": the rowid has no name.
func (t *tableInfo) rowidRef() string {
	for _, name := range []string{"rowid", "_rowid_", "oid"} {
		if _, shadowed := t.byName[name]; !shadowed {
			return name
		}
	}
	if t.pk.Type == TypeInteger {
		return t.pk.quoted
	}
	return ""
}

// logSchemaChanges logs one schema change for each table that the unit of
// work created, deleted or reshaped (columns added, renamed, retyped,
// rebuilt), comparing the registry before it with the registry after it
// (see writeSchema), which shares the tables it did not read again.
// Display names and indexes do not change a table's rows, so they are not
// schema changes.
func logSchemaChanges(c *conn, before, after *schema) error {
	if c.changes.off {
		return nil
	}
	var changed []string
	for _, t := range before.tables {
		if now, ok := after.byID[t.ID]; !ok || now != t && now.shape() != t.shape() {
			changed = append(changed, t.Name)
		}
	}
	for _, t := range after.tables {
		if _, ok := before.byID[t.ID]; !ok {
			changed = append(changed, t.Name)
		}
	}
	for _, name := range changed {
		if err := c.appendChange(changeRecord{table: name, op: ChangeSchema, count: 1}); err != nil {
			return err
		}
	}
	return nil
}

// shape describes the table's name and columns, for comparing two loads of
// the registry.
func (t *tableInfo) shape() string {
	b := appendHTMLSafeString(nil, t.Name)
	for _, col := range t.columns {
		b = append(b, '|')
		b = appendHTMLSafeString(b, col.Name)
		b = append(b, col.Type...)
		b = strconv.AppendBool(b, bool(col.IsNullable))
		b = strconv.AppendBool(b, bool(col.IsPrimary))
		b = strconv.AppendBool(b, bool(col.IsUnique))
		if def, err := colType(col.Type).convert(col.DefaultValue); err == nil {
			b = appendJSONValue(b, def)
		}
	}
	return string(b)
}
