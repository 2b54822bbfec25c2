package projectdata

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Row is one record of a table: column name to value.
//
// Values going in are scalars: nil, bool, numbers (json.Number keeps JSON
// numbers exact; Go ints and floats work too), strings and time.Time; each
// must fit its column, converted only without loss ("42" and 2.0 fit an
// INTEGER column, "abc" and 1.5 do not: ErrInvalidColumnValue; see
// CheckValue for the values no column takes). Values coming out are nil, int64 (INTEGER, and
// BOOLEAN as 0/1), float64 (REAL) or string (TEXT, and DATETIME as text);
// NUMERIC gives int64 or float64. A query (Query) can also read a BLOB,
// as a []byte: JSON carries it as base64 text, which the HTTP client
// returns as a string.
type Row map[string]any

// MarshalJSON encodes the row as encoding/json encodes a map (keys sorted),
// but for a float64, which is written with a fraction or an exponent (2.0,
// never 2), so that a REAL decodes as a float again, as the Store returns
// it, and not as an integer; and for the Go values a Store converts in its
// own way, so that a row sent over HTTP is stored as the Store stores it:
// a float32 is written as the float64 it is (1.100000023841858, not 1.1),
// a time.Time in UTC. A value JSON cannot hold (NaN, ±Inf, a
// channel) is an error, as with encoding/json. Strings are written as they
// are: encoding/json makes them HTML-safe after, unless its Encoder was
// told not to (SetEscapeHTML).
func (r Row) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	var other *json.Encoder // for values of other types than the Store's
	var buf bytes.Buffer
	for i, k := range slices.Sorted(maps.Keys(r)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONText(b, k, false), ':')
		switch v := r[k].(type) {
		case nil:
			b = append(b, "null"...)
		case string:
			b = appendJSONText(b, v, false)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case float64:
			var fits bool
			if b, fits = appendRealJSON(b, v); !fits {
				return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(v), Str: strconv.FormatFloat(v, 'g', -1, 64)}
			}
		case float32:
			var fits bool
			if b, fits = appendRealJSON(b, float64(v)); !fits {
				return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(v), Str: strconv.FormatFloat(float64(v), 'g', -1, 32)}
			}
		case time.Time:
			b = appendJSONText(b, v.UTC().Format(time.RFC3339Nano), false)
		default:
			if other == nil {
				other = json.NewEncoder(&buf)
				other.SetEscapeHTML(false)
			}
			buf.Reset()
			if err := other.Encode(v); err != nil {
				return nil, err
			}
			b = append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a JSON object keeping numbers exact (json.Number),
// so integers keep their full int64 precision. null is a nil Row. Anything
// but an object is ErrInvalidRequest; a nested object or array as a value
// is ErrInvalidColumnValue.
func (r *Row) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*r = nil
		return nil
	}
	row, err := newJSONBytes(b).rowObject("a row")
	if err != nil {
		return err
	}
	*r = row
	return nil
}

// DecodeRows decodes the body of an insert from r: one JSON object (one
// row) or an array of objects. Numbers stay exact (json.Number). It reads
// r as a stream and stops at the first fault: row maxRows+1 (zero: 10,000)
// is ErrTooManyRows before the rest is read.
//
// Errors: ErrInvalidJSON for malformed JSON, ErrInvalidRequest when the
// body or one of its elements is not an object, ErrInvalidColumnValue for
// a nested object or array as a value, ErrTooManyRows, and any error r
// returns.
func DecodeRows(r io.Reader, maxRows int) ([]Row, error) {
	if maxRows <= 0 {
		maxRows = defaultMaxInsertRows
	}
	js := newJSONStream(r)
	defer js.release()
	rows, err := js.rows(maxRows)
	if err != nil {
		return nil, jsonError(err)
	}
	return rows, js.end()
}

// DecodeRows is DecodeRows with the Store's Options.MaxInsertRows.
func (s *Store) DecodeRows(r io.Reader) ([]Row, error) {
	return DecodeRows(r, s.opts.MaxInsertRows)
}

// InsertResult reports an insert.
type InsertResult struct {
	Table         string `json:"table"`
	InsertedCount int    `json:"inserted_count"`
	// InsertedIDs are the primary key values of the rows, in request order:
	// the given value, or the one SQLite assigned (an INTEGER primary key
	// left out or null gets the next rowid).
	InsertedIDs []any `json:"inserted_ids"`
}

// DeleteResult reports the deletion of one record.
type DeleteResult struct {
	Deleted bool   `json:"deleted"`
	Table   string `json:"table"`
	// ID is the primary key value of the deleted row, as a string.
	ID string `json:"id"`
}

// BulkUpdate is a bulk update of the rows that Where selects; it is the
// body of PATCH /projects/{project}/records/{table}.
type BulkUpdate struct {
	// Data maps column names to their new values; it must not be empty.
	Data Row `json:"data"`
	// Where selects the rows. Empty or absent, it is refused
	// (ErrWhereRequired) unless AllowAll is set.
	Where Where `json:"where"`
	// AllowAll lets an empty Where select every row. Only the admin role
	// may set it, with or without a Where.
	AllowAll bool `json:"allow_all"`
}

// BulkDelete is a bulk deletion of the rows that Where selects; it is the
// body of DELETE /projects/{project}/records/{table}. Where and AllowAll
// are as in BulkUpdate.
type BulkDelete struct {
	Where    Where `json:"where"`
	AllowAll bool  `json:"allow_all"`
}

// BulkResult reports a bulk update or delete.
type BulkResult struct {
	Table string `json:"table"`
	// AffectedRows is the number of rows the statement matched and changed.
	AffectedRows int64 `json:"affected_rows"`
}

// Insert inserts rows into a table, atomically: every row or none. A row
// with no keys gets the columns' defaults. Every value is checked against
// its column's type before anything is written. An empty rows inserts
// nothing and succeeds (the table must exist).
//
// Errors: ErrTooManyRows (more than Options.MaxInsertRows rows),
// ErrColumnNotFound (an unknown key), ErrInvalidRequest (a column given
// twice, as "a" and "A"), ErrInvalidColumnValue (a value that does not fit
// its column, or a nested object or array), ErrUniqueViolation,
// ErrNotNullViolation, ErrTableNotFound, ErrProjectNotFound,
// ErrPermissionDenied. Messages name the index of the failing row (0-based:
// "row 2: …") and, where known, its column and value.
func (s *Store) Insert(ctx context.Context, slug, table string, rows []Row) (InsertResult, error) {
	return s.insert(ctx, slug, table, len(rows), rows, func(t *tableInfo) (*insertPlan, error) {
		return planInsert(t, rows)
	})
}

// insert inserts n rows (see Insert): rows is what idempotency
// fingerprints, planInsert checks and plans them for a table.
func (s *Store) insert(ctx context.Context, slug, table string, n int, rows any, planInsert func(t *tableInfo) (*insertPlan, error)) (InsertResult, error) {
	var res InsertResult
	err := s.withWrite(ctx, slug, writeCall{op: OpInsertRecords, args: []any{table, rows}, results: []any{&res}}, func(ctx context.Context, p *project) error {
		if n > s.opts.MaxInsertRows {
			return errorf(ErrTooManyRows, "an insert takes at most %d rows; %d were given", s.opts.MaxInsertRows, n)
		}
		early := p.planEarly(table, planInsert)
		if early != nil {
			defer early.releaseImages()
		}
		return p.write(ctx, func(c *conn) (err error) {
			res, err = p.insertPlanned(ctx, c, table, early, planInsert)
			return err
		})
	})
	if err != nil {
		return InsertResult{}, err
	}
	return res, nil
}

// planEarly plans an insert against the cached registry, before taking
// the writer, with its change-log images unless the log is off: so one
// insert's checks and encoding overlap another's SQLite work (and a large
// insert's encoding its own, see encodeImagesConcurrently). It returns nil
// when there is no cached table or the rows do not fit it (the writer
// plans again, and tells why).
func (p *project) planEarly(table string, planInsert func(t *tableInfo) (*insertPlan, error)) *insertPlan {
	t := p.cachedTable(table)
	if t == nil {
		return nil
	}
	early, err := planInsert(t)
	if err != nil {
		return nil
	}
	switch n := len(early.shapes); {
	case p.store.opts.changeLogOff:
	case n < concurrentImageRows:
		early.encodeEarly()
	default:
		early.encodeImagesConcurrently()
	}
	return early
}

// insertPlanned runs an insert on the writer: the early plan if it was
// made with the registry the writer sees, else a new one.
func (p *project) insertPlanned(ctx context.Context, c *conn, table string, early *insertPlan, planInsert func(t *tableInfo) (*insertPlan, error)) (InsertResult, error) {
	t, err := p.tableFor(c, table)
	if err != nil {
		return InsertResult{}, err
	}
	plan := early
	if plan == nil || plan.t != t {
		if plan, err = planInsert(t); err != nil {
			return InsertResult{}, err
		}
	}
	ids, err := plan.run(ctx, c)
	if err != nil {
		return InsertResult{}, err
	}
	if err := addRowCount(c, t, int64(len(ids))); err != nil {
		return InsertResult{}, err
	}
	if err := plan.logInsert(c, ids); err != nil {
		return InsertResult{}, err
	}
	return InsertResult{Table: t.Name, InsertedCount: len(ids), InsertedIDs: ids}, nil
}

// tableFor returns a registered table by name or numeric id, with the
// registry read through c.
func (p *project) tableFor(c *conn, ref string) (*tableInfo, error) {
	sc, err := p.schemaFor(c)
	if err != nil {
		return nil, err
	}
	return sc.lookupTable(ref)
}

// cachedTable returns a table of the cached registry, or nil when there
// is none or it has no such table.
func (p *project) cachedTable(ref string) *tableInfo {
	sc := p.cachedSchema()
	if sc == nil {
		return nil
	}
	t, err := sc.lookupTable(ref)
	if err != nil {
		return nil
	}
	return t
}

// colValue is one column of a row with its converted value.
type colValue struct {
	col *columnInfo
	val sqlValue
}

// rowValues checks a row against t and appends its columns with their
// converted values to buf, ordered by column id: the same keys always give
// the same order, whatever the map's order.
func (t *tableInfo) rowValues(row Row, buf []colValue) ([]colValue, error) {
	start := len(buf)
	for k, v := range row {
		col, err := t.columnNamed(k)
		if err != nil {
			return nil, err
		}
		x, err := colType(col.Type).convert(v)
		if err != nil {
			return nil, errors.WithMessagef(err, "column %q", col.Name)
		}
		if buf, err = addColValue(buf, start, colValue{col, sqlValueOf(x)}); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// addColValue adds cv to the row's values buf[start:], kept ordered by
// column id; a column given twice is ErrInvalidRequest.
func addColValue(buf []colValue, start int, cv colValue) ([]colValue, error) {
	// Insertion sort: rows have few keys.
	buf = append(buf, cv)
	for j := len(buf) - 1; j > start && buf[j].col.ID <= buf[j-1].col.ID; j-- {
		if buf[j].col == buf[j-1].col {
			return nil, errorf(ErrInvalidRequest, "column %q is given twice", cv.col.Name)
		}
		buf[j], buf[j-1] = buf[j-1], buf[j]
	}
	return buf, nil
}

// columnNamed finds a column by name, case-insensitively. Unlike
// lookupColumn it takes no numeric ids: row keys, where columns and orders
// are names.
func (t *tableInfo) columnNamed(name string) (*columnInfo, error) {
	if c, ok := t.byName[foldName(name)]; ok {
		return c, nil
	}
	return nil, errorf(ErrColumnNotFound, "column %.80q does not exist in table %q", name, t.Name)
}

// insertShape is the statement for one set of columns.
type insertShape struct {
	sql       string
	cols      []*columnInfo // the statement's columns, in parameter order
	pk        int           // index of the primary key in cols, or -1
	returning bool          // the statement returns the primary key (see newInsertShape)

	byColumn []int // for each column of the table, its index in cols, or -1

	perChunk int    // rows of chunkSQL; below 2: rows are inserted one by one
	chunkSQL string // the statement inserting perChunk rows at once; "" until used
}

// maxChunkRows is the most rows one INSERT statement takes: a statement of
// 32 rows inserts them about twice as fast as 32 runs of a one-row
// statement (SQLite runs its program once, not 32 times).
const maxChunkRows = 32

// newInsertShape builds the statement inserting the columns of vals.
func newInsertShape(t *tableInfo, vals []colValue) *insertShape {
	sh := &insertShape{cols: make([]*columnInfo, len(vals)), pk: -1}
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(t.quoted)
	if len(vals) == 0 {
		b.WriteString(" DEFAULT VALUES")
	} else {
		b.WriteString(" (")
		for i, cv := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(cv.col.quoted)
			sh.cols[i] = cv.col
			if cv.col == t.pk {
				sh.pk = i
			}
		}
		b.WriteString(") VALUES (?")
		b.WriteString(strings.Repeat(", ?", len(vals)-1))
		b.WriteString(")")
	}
	// Without its value, the key is the rowid for an INTEGER primary key
	// (LastInsertRowID) but a default for any other: read it back.
	if sh.pk < 0 && t.pk != nil && t.pk.Type != TypeInteger {
		sh.returning = true
		b.WriteString(" RETURNING ")
		b.WriteString(t.pk.quoted)
	}
	sh.sql = b.String()
	sh.byColumn = columnArgs(t, sh.cols)
	// Rows whose keys are given or rowids come in chunks (see run); a key
	// read back, or no columns, one row at a time.
	if len(vals) > 0 && !sh.returning {
		sh.perChunk = min(maxChunkRows, maxQueryParams/len(vals))
	}
	return sh
}

// chunk returns the statement inserting perChunk rows of the shape. Shapes
// are shared by the plans of a table (lastShape), but chunk runs only on
// the project's writer, one write at a time, so its lazy field needs no lock.
func (sh *insertShape) chunk() string {
	if sh.chunkSQL == "" {
		sh.chunkSQL = sh.sql + strings.Repeat(", ("+strings.Repeat("?, ", len(sh.cols)-1)+"?)", sh.perChunk-1)
	}
	return sh.chunkSQL
}

// matches reports whether vals has exactly the shape's columns.
func (sh *insertShape) matches(vals []colValue) bool {
	if len(vals) != len(sh.cols) {
		return false
	}
	for i, cv := range vals {
		if cv.col != sh.cols[i] {
			return false
		}
	}
	return true
}

// insertPlan is a checked insert: every row's statement and values, made
// before anything is written.
type insertPlan struct {
	t      *tableInfo
	shapes []*insertShape // by row
	args   []sqlValue     // the converted values, row after row
	starts []int          // row i's values are args[starts[i]:starts[i+1]]
	images *insertImages  // the rows' change-log images, when encoded early
	// imagesDone, when not nil, is closed when a goroutine of its own
	// has encoded images (encodeImagesConcurrently).
	imagesDone chan struct{}
	// oneRow backs shapes, starts, args and the keys run returns in a
	// plan of one row of a few values (most writes), which is then one
	// allocation.
	oneRow struct {
		shapes [1]*insertShape
		starts [2]int
		args   [8]sqlValue
		ids    [1]any
	}
}

// planInsert checks every row and plans its statement: one statement per
// distinct set of columns, reused by every row with that set.
func planInsert(t *tableInfo, rows []Row) (*insertPlan, error) {
	perRow := 0
	if len(rows) > 0 {
		perRow = len(rows[0])
	}
	pb := newPlanBuilder(t, len(rows), perRow)
	var (
		buf []colValue
		err error
	)
	for i, row := range rows {
		buf, err = t.rowValues(row, buf[:0])
		if err != nil {
			return nil, errors.WithMessagef(err, "row %d", i)
		}
		pb.add(i, buf)
	}
	return pb.pl, nil
}

// planBuilder makes an insert plan row by row.
type planBuilder struct {
	pl    *insertPlan
	bySQL map[string]*insertShape
	prev  *insertShape // the last row's
}

// newPlanBuilder starts the plan of n rows of t, of about perRow values each.
func newPlanBuilder(t *tableInfo, n, perRow int) *planBuilder {
	pl := &insertPlan{t: t}
	if n == 1 && perRow <= len(pl.oneRow.args) {
		pl.shapes, pl.starts, pl.args = pl.oneRow.shapes[:], pl.oneRow.starts[:], pl.oneRow.args[:0]
	} else {
		pl.shapes, pl.starts, pl.args = make([]*insertShape, n), make([]int, n+1), make([]sqlValue, 0, n*perRow)
	}
	return &planBuilder{pl: pl}
}

// add plans row i, whose checked values are vals (ordered by column id).
func (pb *planBuilder) add(i int, vals []colValue) {
	pl, sh := pb.pl, pb.prev
	if sh == nil || !sh.matches(vals) {
		sh = pb.shape(vals)
		pb.prev = sh
	}
	pl.shapes[i] = sh
	for _, cv := range vals {
		pl.args = append(pl.args, cv.val)
	}
	pl.starts[i+1] = len(pl.args)
}

// shape returns the statement of rows with the columns of vals: the
// table's last one if it matches, else one this plan has, else a new one.
func (pb *planBuilder) shape(vals []colValue) *insertShape {
	t := pb.pl.t
	if last := t.lastShape.Load(); last != nil && last.matches(vals) {
		return last
	}
	sh := newInsertShape(t, vals)
	if known, ok := pb.bySQL[sh.sql]; ok {
		return known
	}
	if pb.bySQL == nil {
		pb.bySQL = map[string]*insertShape{}
	}
	pb.bySQL[sh.sql] = sh
	t.lastShape.Store(sh)
	return sh
}

// run executes the plan on c, inside the caller's transaction, and returns
// the primary keys of the rows in order.
func (pl *insertPlan) run(ctx context.Context, c *conn) ([]any, error) {
	ids := pl.oneRow.ids[:]
	if len(pl.shapes) != len(ids) {
		ids = make([]any, len(pl.shapes))
	}
	vals := make([]any, 1)
	scan := func(st *sqlite3.Stmt) error { return st.Columns(vals...) }
	var top largestKey
	for i := 0; i < len(pl.shapes); i++ {
		sh := pl.shapes[i]
		if n := pl.chunkAt(i); n > 0 {
			done, err := pl.runChunk(c, i, n, ids, &top)
			if err != nil {
				return nil, err
			}
			if done {
				i += n - 1
				continue
			}
			// A row of the chunk failed: the statement changed nothing,
			// and the rows one by one tell which and why.
		}
		top.known = false // a row going in alone may change it
		args := pl.args[pl.starts[i]:pl.starts[i+1]]
		var err error
		if sh.returning {
			_, err = c.queryRow(sh.sql, anys(args), scan)
			ids[i] = vals[0]
		} else {
			// Every parameter is bound for every row: the cached
			// statement is reused without clearing its bindings.
			var st *sqlite3.Stmt
			if st, err = c.prepare(sh.sql); err != nil {
				return nil, err
			}
			if err = bindValues(st, args); err == nil {
				err = st.Exec()
			}
			if sh.pk >= 0 && !args[sh.pk].isNull() {
				ids[i] = args[sh.pk].any()
			} else {
				ids[i] = c.db.LastInsertRowID()
			}
		}
		if err != nil {
			return nil, pl.rowError(ctx, c, i, err)
		}
	}
	return ids, nil
}

// chunkAt returns how many rows from row i go into one multi-row
// statement: a full chunk of rows of one shape whose keys are all given,
// or all rowids to be assigned; else 0.
func (pl *insertPlan) chunkAt(i int) int {
	sh := pl.shapes[i]
	n := sh.perChunk
	if n < 2 || i+n > len(pl.shapes) {
		return 0
	}
	given := sh.pk >= 0 && !pl.args[pl.starts[i]+sh.pk].isNull()
	if !given && (pl.t.pk == nil || pl.t.pk.Type != TypeInteger) {
		return 0 // no rowid key to know (a table's rowid is not its key)
	}
	for j := i; j < i+n; j++ {
		if pl.shapes[j] != sh || (sh.pk >= 0 && !pl.args[pl.starts[j]+sh.pk].isNull() != given) {
			return 0
		}
	}
	return n
}

// runChunk inserts rows i..i+n-1 (see chunkAt) with one statement and sets
// their ids. When the statement fails it changed nothing (SQLite undoes a
// failed statement) and done is false, for the caller to insert the rows
// one by one, which finds the failing row; unless SQLite rolled the whole
// transaction back, which is the error.
func (pl *insertPlan) runChunk(c *conn, i, n int, ids []any, top *largestKey) (done bool, err error) {
	sh := pl.shapes[i]
	// A rowid SQLite assigns (the INTEGER key) is one more than the largest,
	// so the rows of one statement get consecutive rowids in order, unless
	// the largest is near the end of the range (SQLite then picks free
	// ones at random): there, the rows go one by one.
	rowids := sh.pk < 0 || pl.args[pl.starts[i]+sh.pk].isNull()
	if rowids {
		if !top.known {
			if _, err := c.queryRow(`SELECT max(`+pl.t.pk.quoted+`) FROM `+pl.t.quoted, nil, func(st *sqlite3.Stmt) error {
				top.key = st.ColumnInt64(0)
				return nil
			}); err != nil {
				return false, err
			}
			top.known = true
		}
		if top.key > math.MaxInt64-int64(n) {
			return false, nil
		}
	}
	st, err := c.prepare(sh.chunk())
	if err != nil {
		return false, err
	}
	if err := bindValues(st, pl.args[pl.starts[i]:pl.starts[i+n]]); err != nil {
		return false, err
	}
	if err := st.Exec(); err != nil {
		if c.db.GetAutocommit() {
			return false, err // SQLite rolled the transaction back: nothing to go on in
		}
		return false, nil
	}
	last := c.db.LastInsertRowID()
	for j := range n {
		if rowids {
			ids[i+j] = last - int64(n-1-j)
		} else {
			ids[i+j] = pl.args[pl.starts[i+j]+sh.pk].any()
		}
	}
	if rowids {
		top.key = last
	} else {
		top.known = false // given keys may be larger
	}
	return true, nil
}

// largestKey is a table's largest INTEGER key during an insert's run of
// chunks: read once, then the last rowid a chunk got, until a row goes in
// alone or with given keys.
type largestKey struct {
	key   int64
	known bool
}

// rowError explains the failure of row i: which row and, for a constraint,
// which column and value.
func (pl *insertPlan) rowError(ctx context.Context, c *conn, i int, err error) error {
	err = dbError(ctx, err)
	code := ErrorCode(err)
	sh, args := pl.shapes[i], pl.args[pl.starts[i]:pl.starts[i+1]]
	switch code {
	case ErrUniqueViolation:
		// The row failed, so a row holding one of its unique values is
		// the one it collides with (an earlier row of this insert, maybe).
		for j, col := range sh.cols {
			if !bool(col.IsUnique) || args[j].isNull() {
				continue
			}
			found := false
			qerr := c.queryOnce(`SELECT 1 FROM `+pl.t.quoted+` WHERE `+col.quoted+` = ? LIMIT 1`, anys(args[j:j+1]), func(*sqlite3.Stmt) error {
				found = true
				return nil
			})
			if qerr == nil && found {
				return errorf(code, "row %d: column %q value %s already exists in table %q", i, col.Name, showValue(args[j].any()), pl.t.Name)
			}
		}
	case ErrNotNullViolation:
		for _, col := range pl.t.columns {
			if col.IsNullable || (col == pl.t.pk && col.Type == TypeInteger) {
				continue // nullable, or the rowid: NULL assigns one
			}
			if j := sh.index(col); (j >= 0 && args[j].isNull()) || (j < 0 && col.DefaultValue == nil) {
				return errorf(code, "row %d: column %q must not be NULL", i, col.Name)
			}
		}
	case ErrInternal:
		return err
	}
	return errors.WithMessagef(err, "row %d", i)
}

// index returns the position of col in the shape, or -1.
func (sh *insertShape) index(col *columnInfo) int {
	for i, c := range sh.cols {
		if c == col {
			return i
		}
	}
	return -1
}

// showValue renders a converted value for a message.
func showValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(truncate(v))
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "NULL"
}

// selectSQL is the SELECT of every column of t, in table order, from t,
// followed by tail (a WHERE or ORDER BY clause of ours).
func selectSQL(t *tableInfo, tail ...string) string {
	n := len("SELECT ") + len(" FROM ") + len(t.quoted)
	for _, col := range t.columns {
		n += len(col.quoted) + len(", ")
	}
	for _, s := range tail {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString("SELECT ")
	for i, col := range t.columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col.quoted)
	}
	b.WriteString(" FROM ")
	b.WriteString(t.quoted)
	for _, s := range tail {
		b.WriteString(s)
	}
	return b.String()
}

// scanRow reads the current row of a statement whose first columns are
// t's (selectSQL, byKeyAndVersionSQL); vals is scratch space of the
// statement's column count.
func (t *tableInfo) scanRow(st *sqlite3.Stmt, vals []any) (Row, error) {
	if err := st.Columns(vals...); err != nil {
		return nil, err
	}
	row := make(Row, len(t.columns))
	for i, col := range t.columns {
		row[col.Name] = vals[i]
	}
	return row, nil
}

// key converts a primary key value, or its string form, for t's key.
func (t *tableInfo) key(id any) (any, error) {
	if t.pk == nil {
		return nil, errorf(ErrRecordNotFound, "table %q has no primary key", t.Name)
	}
	k, err := colType(t.pk.Type).convert(id)
	if err != nil || k == nil {
		return nil, errorf(ErrRecordNotFound, "no record with %s %s in table %q: the key is %s", t.pk.Name, showID(id), t.Name, t.pk.Type)
	}
	return k, nil
}

// tableAndKey finds a table and converts a primary key value for it.
func tableAndKey(sc *schema, table string, id any) (*tableInfo, any, error) {
	t, err := sc.lookupTable(table)
	if err != nil {
		return nil, nil, err
	}
	k, err := t.key(id)
	return t, k, err
}

// showID renders an id as given, for a message.
func showID(id any) string {
	switch id := id.(type) {
	case string:
		return strconv.Quote(truncate(id))
	case json.Number:
		return truncate(id.String())
	case nil:
		return "NULL"
	}
	if v, err := colType(TypeNumeric).convert(id); err == nil {
		return showValue(v)
	}
	return "of an unsupported kind"
}

// GetRecord returns the row of a table whose primary key is id: the key
// value or its string form (5 or "5" for an INTEGER key).
//
// Errors: ErrRecordNotFound (also for an id that cannot be a key of the
// table, such as "abc" for an INTEGER key), ErrQueryResultTooLarge (a row
// whose JSON takes more than Options.QueryMaxBytes, as a list refuses it),
// ErrTableNotFound, ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) GetRecord(ctx context.Context, slug, table string, id any) (Row, error) {
	rec, err := s.FindRecord(ctx, slug, table, id)
	return rec.Row, err
}

// Record is a row with the stored name of its table.
type Record struct {
	Table string `json:"table"`
	Row   Row    `json:"row"`
}

// FindRecord is GetRecord that also returns the table's name as stored,
// whatever the spelling or id the table was given by.
//
// Errors: as GetRecord.
func (s *Store) FindRecord(ctx context.Context, slug, table string, id any) (Record, error) {
	var rec Record
	err := s.withProject(ctx, slug, OpGetRecord, func(p *project) error {
		return p.readByKey(ctx, table, id, func(t *tableInfo, st *sqlite3.Stmt) (err error) {
			if err := t.checkRowBudget(st, s.opts.QueryMaxBytes); err != nil {
				return err
			}
			rec.Table = t.Name
			rec.Row, err = t.scanRow(st, make([]any, st.ColumnCount()))
			return err
		})
	})
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// readByKey reads the row of table whose primary key is id (as GetRecord
// takes it) and calls fn with st on it; a missing row is ErrRecordNotFound.
//
// With a registry cached, it runs one statement on a reader, outside any
// transaction: the row and the registry version, read in the statement's
// one snapshot (byKeyAndVersion). When that version is the cached
// registry's, the row has the columns the registry says. Otherwise (a
// registry changed since, a table or key the cached registry does not
// know, SQLite's ERROR or SCHEMA for a schema changed by hand) the read
// runs again as any other (readSchema), which loads the registry.
func (p *project) readByKey(ctx context.Context, table string, id any, fn func(t *tableInfo, st *sqlite3.Stmt) error) error {
	if sc := p.cachedSchema(); sc != nil {
		if t, k, err := tableAndKey(sc, table, id); err == nil {
			stale, found := false, false
			err := p.read(ctx, func(c *conn) error {
				_, err := c.queryRow(t.keys.byKeyAndVersion, []any{k}, func(st *sqlite3.Stmt) error {
					if st.ColumnInt64(len(t.columns)) != sc.version {
						stale = true
						return nil
					}
					if st.ColumnType(t.keys.pkAt) == sqlite3.NULL {
						return nil
					}
					found = true
					return fn(t, st)
				})
				return err
			})
			if !stale && !errors.Is(err, sqlite3.ERROR) && !errors.Is(err, sqlite3.SCHEMA) {
				if err == nil && !found {
					err = recordNotFound(t, k)
				}
				return err
			}
		}
	}
	return p.readSchema(ctx, func(c *conn, sc *schema) error {
		t, k, err := tableAndKey(sc, table, id)
		if err != nil {
			return err
		}
		found, err := c.queryRow(t.keys.byKey, []any{k}, func(st *sqlite3.Stmt) error {
			return fn(t, st)
		})
		if err == nil && !found {
			err = recordNotFound(t, k)
		}
		return err
	})
}

// recordNotFound is the error of a key with no row in t.
func recordNotFound(t *tableInfo, k any) error {
	return errorf(ErrRecordNotFound, "no record with %s %s in table %q", t.pk.Name, showValue(k), t.Name)
}

// DeleteRecord deletes the row of a table whose primary key is id (as in
// GetRecord) and returns the key as a string.
//
// Errors: ErrRecordNotFound, ErrTableNotFound, ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) DeleteRecord(ctx context.Context, slug, table string, id any) (DeleteResult, error) {
	var res DeleteResult
	err := s.withWrite(ctx, slug, writeCall{op: OpDeleteRecord, args: []any{table, id}, results: []any{&res}}, func(ctx context.Context, p *project) error {
		return p.write(ctx, func(c *conn) error {
			sc, err := p.schemaFor(c)
			if err != nil {
				return err
			}
			t, k, err := tableAndKey(sc, table, id)
			if err != nil {
				return err
			}
			if err := c.exec(`DELETE FROM `+t.quoted+` WHERE `+t.pk.quoted+` = ?`, k); err != nil {
				return dbError(ctx, err)
			}
			if c.db.Changes() == 0 {
				return recordNotFound(t, k)
			}
			if err := addRowCount(c, t, -1); err != nil {
				return err
			}
			if err := c.appendChange(changeRecord{table: t.Name, op: ChangeDelete, count: 1, data: appendKeys(nil, []any{k})}); err != nil {
				return err
			}
			id := showValue(k)
			if s, ok := k.(string); ok {
				id = s
			}
			res = DeleteResult{Deleted: true, Table: t.Name, ID: id}
			return nil
		})
	})
	if err != nil {
		return DeleteResult{}, err
	}
	return res, nil
}

// UpdateRecords sets the columns of upd.Data in every row upd.Where
// selects, and reports how many rows that was.
//
// Errors: ErrInvalidRequest (empty Data, a column given twice),
// ErrWhereRequired (empty Where without AllowAll), ErrPermissionDenied
// (AllowAll without the admin role, or no write role),
// ErrColumnNotFound, ErrInvalidColumnValue, ErrInvalidWhere,
// ErrUniqueViolation, ErrNotNullViolation, ErrQueryBudgetExceeded (the
// update ran past Options.WriteTimeout, and changed nothing),
// ErrTableNotFound, ErrProjectNotFound.
func (s *Store) UpdateRecords(ctx context.Context, slug, table string, upd BulkUpdate) (BulkResult, error) {
	return s.bulkChange(ctx, slug, table, OpUpdateRecords, upd, upd.Where, upd.AllowAll, func(t *tableInfo, sql *strings.Builder) ([]any, bool, error) {
		if len(upd.Data) == 0 {
			return nil, false, errorf(ErrInvalidRequest, "data must be a non-empty object of column name to new value")
		}
		vals, err := t.rowValues(upd.Data, nil)
		if err != nil {
			return nil, false, errors.WithMessage(err, "data")
		}
		return t.writeUpdateSet(sql, vals, nil)
	})
}

// DeleteRecords deletes every row del.Where selects, and reports how many
// rows that was.
//
// Errors: ErrWhereRequired (empty Where without AllowAll),
// ErrPermissionDenied (AllowAll without the admin role, or no write
// role), ErrColumnNotFound, ErrInvalidWhere, ErrInvalidColumnValue (a
// where value that does not fit its column), ErrQueryBudgetExceeded (the
// deletion ran past Options.WriteTimeout, and deleted nothing),
// ErrTableNotFound, ErrProjectNotFound.
func (s *Store) DeleteRecords(ctx context.Context, slug, table string, del BulkDelete) (BulkResult, error) {
	return s.bulkChange(ctx, slug, table, OpDeleteRecords, del, del.Where, del.AllowAll, func(t *tableInfo, sql *strings.Builder) ([]any, bool, error) {
		sql.WriteString("DELETE FROM ")
		sql.WriteString(t.quoted)
		return nil, false, nil
	})
}

// bulkChange runs a bulk update or delete: head writes the statement up to
// its WHERE clause and returns the values it binds and whether it sets the
// primary key, then where selects the rows; body is the request,
// fingerprinted for idempotency.
func (s *Store) bulkChange(ctx context.Context, slug, table string, op Operation, body any, where Where, allowAll bool,
	head func(t *tableInfo, sql *strings.Builder) (args []any, setsKey bool, err error)) (BulkResult, error) {
	var res BulkResult
	err := s.withWrite(ctx, slug, writeCall{op: op, args: []any{table, body}, results: []any{&res}}, func(ctx context.Context, p *project) error {
		if allowAll {
			if err := authorize(ctx, slug, OpAllowAll); err != nil {
				return err
			}
		} else if len(where) == 0 {
			return errorf(ErrWhereRequired, "an explicit where clause is required unless an administrator sets allow_all")
		}
		return p.writeBulk(ctx, func(c *conn) error {
			t, err := p.tableFor(c, table)
			if err != nil {
				return err
			}
			var sql, cond strings.Builder
			args, setsKey, err := head(t, &sql)
			if err != nil {
				return err
			}
			set := len(args)
			if args, err = where.appendSQL(t, &cond, args); err != nil {
				return err
			}
			changeOp := ChangeDelete
			if op == OpUpdateRecords {
				changeOp = ChangeUpdate
			}
			n, err := c.bulkExec(t, changeOp, sql.String(), cond.String(), args, set, setsKey)
			if err != nil {
				err = dbError(ctx, p.writeBudgetError(ctx, c, err, "the bulk "+string(changeOp)))
				if code := ErrorCode(err); code != ErrInternal {
					err = errors.WithMessagef(err, "table %q", t.Name)
				}
				return err
			}
			res = BulkResult{Table: t.Name, AffectedRows: n}
			if op == OpDeleteRecords {
				return addRowCount(c, t, -res.AffectedRows)
			}
			return nil
		})
	})
	if err != nil {
		return BulkResult{}, err
	}
	return res, nil
}
