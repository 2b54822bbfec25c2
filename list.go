package projectdata

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// CountMode says whether a record list counts the rows its where matches.
type CountMode string

// Count modes of ListOptions.Count.
const (
	CountExact CountMode = "exact" // RecordList.Total is the exact count
	CountNone  CountMode = "none"  // RecordList.Total is nil; nothing is counted
)

// ListOptions selects, orders and pages ListRecords.
type ListOptions struct {
	// Where selects the rows, as in BulkUpdate. Empty: every row.
	Where Where
	// Order is a comma-separated list of column names, each ascending or,
	// with a "-" before it, descending ("-qty,item"); the primary key
	// breaks ties, in the direction of the last column. At most 32
	// columns (ErrInvalidRequest). Empty: the primary key, ascending.
	Order string
	// Columns are the columns each row holds. Empty: every column.
	Columns []string
	// Limit is the page size, clamped to 1..1000. Zero: 100.
	Limit int
	// After continues a list after the last row of an earlier page: the
	// page's NextCursor, for the same table, Order and Where. Empty: the
	// first page.
	After Cursor
	// Offset is the number of rows to skip; it cannot be combined with
	// After. Negative is ErrInvalidRequest. Cursors cost the same at any
	// depth; an offset costs the rows it skips.
	Offset int
	// Count is CountExact or CountNone. Zero: CountExact.
	Count CountMode
}

// RecordList is a page of a table's rows.
type RecordList struct {
	Table string `json:"table"`
	Rows  []Row  `json:"rows"`
	// Total is the number of rows Where matches, nil with CountNone.
	Total  *int64 `json:"total"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
	// NextCursor continues the list after the last row of Rows (see
	// ListOptions.After); empty on the last page.
	NextCursor Cursor `json:"next_cursor"`
	// Truncated is true when the page holds fewer than Limit rows because
	// the next row would have taken the rows past the result budget
	// (Options.QueryMaxBytes); NextCursor continues after the last row.
	Truncated bool `json:"truncated"`
}

// Record list limits.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
	// maxOrderColumns bounds the columns an order names: a page after a
	// cursor reads one range per column of the order (see keysetArms),
	// each its own statement as wide as the order, so an order of
	// hundreds of columns took the whole execution budget to prepare them
	// on a table of five rows.
	maxOrderColumns = 32
)

// ListRecords returns a page of a table's rows, the rows Where selects in
// the given Order, and their exact count, all read from one snapshot. An
// unfiltered count is kept with the table and costs no scan; a filtered
// one counts the matching rows. The page obeys the result budget
// (Options.QueryMaxBytes): it stops before the row that would exceed it,
// with Truncated set. The reads obey the execution budget
// (Options.QueryTimeout).
//
// Errors: ErrInvalidRequest (a bad order or one of more than 32 columns,
// a bad columns, count or offset, offset with After), ErrInvalidCursor,
// ErrColumnNotFound, ErrInvalidWhere, ErrInvalidColumnValue,
// ErrQueryResultTooLarge (one row larger than the result budget),
// ErrQueryBudgetExceeded (the message names the full scans, as the hint
// for an index), ErrServerBusy (as for Query, at
// Options.MaxSQLiteMemory), ErrTableNotFound, ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) ListRecords(ctx context.Context, slug, table string, opts ListOptions) (RecordList, error) {
	return s.listRecords(ctx, slug, table, opts, nil)
}

// AppendRecordListJSON appends the page ListRecords returns to dst as JSON:
// the same bytes as json.Marshal of that RecordList, with its rows encoded
// straight from SQLite's columns, building no Row. On error dst is
// returned as it was.
//
// Errors: as ListRecords.
func (s *Store) AppendRecordListJSON(ctx context.Context, dst []byte, slug, table string, opts ListOptions) ([]byte, error) {
	enc := &jsonRows{start: len(dst), buf: dst}
	list, err := s.listRecords(ctx, slug, table, opts, enc)
	if err != nil {
		return dst, err
	}
	out := enc.buf
	out = append(out, `],"total":`...)
	if list.Total == nil {
		out = append(out, "null"...)
	} else {
		out = strconv.AppendInt(out, *list.Total, 10)
	}
	out = append(out, `,"limit":`...)
	out = strconv.AppendInt(out, int64(list.Limit), 10)
	out = append(out, `,"offset":`...)
	out = strconv.AppendInt(out, int64(list.Offset), 10)
	out = append(out, `,"next_cursor":`...)
	cursor, _ := list.NextCursor.MarshalJSON()
	out = append(out, cursor...)
	out = append(out, `,"truncated":`...)
	out = strconv.AppendBool(out, list.Truncated)
	return append(out, '}'), nil
}

// listRecords is ListRecords, with the rows encoded into enc when it is
// not nil (the list's Rows then stay empty).
func (s *Store) listRecords(ctx context.Context, slug, table string, opts ListOptions, enc *jsonRows) (RecordList, error) {
	if opts.Limit == 0 {
		opts.Limit = defaultListLimit
	}
	opts.Limit = max(1, min(opts.Limit, maxListLimit))
	switch {
	case opts.Offset < 0:
		return RecordList{}, errorf(ErrInvalidRequest, "offset must not be negative")
	case opts.Offset > 0 && opts.After != "":
		return RecordList{}, errorf(ErrInvalidRequest, "offset cannot be combined with after: a cursor already says where the page starts")
	case opts.Count != "" && opts.Count != CountExact && opts.Count != CountNone:
		return RecordList{}, errorf(ErrInvalidRequest, "count must be exact or none, not %.20q", opts.Count)
	}
	var list RecordList
	err := s.withProject(ctx, slug, OpListRecords, func(p *project) error {
		return p.readSchema(ctx, func(c *conn, sc *schema) error {
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			pl, err := planList(t, opts)
			if err != nil {
				return err
			}
			var after []any
			if opts.After != "" {
				if after, err = decodeCursor(p.cursorKey, pl.binding, opts.After, len(pl.order)); err != nil {
					return err
				}
			}
			if enc != nil { // afresh: readSchema may call this again
				enc.buf = append(enc.buf[:enc.start], `{"table":`...)
				enc.buf = appendHTMLSafeString(enc.buf, t.Name)
				enc.buf = append(enc.buf, `,"rows":[`...)
				enc.rows = 0
			}
			list, err = s.runList(ctx, c, sc, p.cursorKey, pl, opts, after, enc)
			return err
		})
	})
	if err != nil {
		return RecordList{}, err
	}
	return list, nil
}

// Rows iterates over the rows of a table that opts selects, in its order,
// reading a page (opts.Limit rows) at a time with the cursor, so memory
// stays bounded by one page whatever the table's size. opts.Count is
// ignored. An error ends the iteration, as the last pair.
func (s *Store) Rows(ctx context.Context, slug, table string, opts ListOptions) iter.Seq2[Row, error] {
	return RowsOfPages(opts, func(opts ListOptions) (RecordList, error) {
		return s.ListRecords(ctx, slug, table, opts)
	})
}

// RowsOfPages iterates over the rows of the pages list returns, from the
// page opts selects on, following each page's NextCursor (opts.Count is
// ignored): Store.Rows over ListRecords, and the HTTP client's Rows over
// its own. An error ends the iteration, as the last pair.
func RowsOfPages(opts ListOptions, list func(ListOptions) (RecordList, error)) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		opts.Count = CountNone
		for {
			page, err := list(opts)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, row := range page.Rows {
				if !yield(row, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			opts.After, opts.Offset = page.NextCursor, 0
		}
	}
}

// orderTerm is one column of a list's order.
type orderTerm struct {
	col  *columnInfo
	desc bool
	at   int // the column's index in the statement's result
}

// nullable reports whether the term's column can hold NULL.
func (o orderTerm) nullable() bool {
	return bool(o.col.IsNullable && !o.col.IsPrimary)
}

// listPlan is a checked list: the columns to read, the order and the
// where, and the binding its cursors are signed for.
type listPlan struct {
	t         *tableInfo
	out       int           // the first out columns of sel are returned
	sel       []*columnInfo // the statement's columns: the returned ones, then order columns not among them
	order     []orderTerm   // ends with the primary key
	whereSQL  string        // " WHERE …" or empty
	whereArgs []any
	orderBy   string // " ORDER BY …", by the columns' positions in sel
	binding   []byte // table, order and where: what a cursor belongs to
}

// planList checks opts against t.
func planList(t *tableInfo, opts ListOptions) (*listPlan, error) {
	if t.pk == nil {
		return nil, errors.New("list: table has no primary key")
	}
	pl := &listPlan{t: t}
	if len(opts.Columns) == 0 {
		pl.sel = append(pl.sel, t.columns...)
	}
	for _, name := range opts.Columns {
		col, err := t.columnNamed(name)
		if err != nil {
			return nil, err
		}
		if pl.index(col) >= 0 {
			return nil, errorf(ErrInvalidRequest, "columns names %q twice", col.Name)
		}
		pl.sel = append(pl.sel, col)
	}
	pl.out = len(pl.sel)

	var terms []string
	if opts.Order != "" {
		terms = strings.Split(opts.Order, ",")
	}
	if len(terms) > maxOrderColumns {
		return nil, errorf(ErrInvalidRequest, "order names %d columns; at most %d are allowed", len(terms), maxOrderColumns)
	}
	for _, term := range terms {
		name, desc := strings.CutPrefix(strings.TrimSpace(term), "-")
		if name == "" {
			return nil, errorf(ErrInvalidRequest, `order must be comma-separated column names, each with "-" before it for descending`)
		}
		col, err := t.columnNamed(name)
		if err != nil {
			return nil, err
		}
		if err := pl.addTerm(col, desc); err != nil {
			return nil, err
		}
	}
	if !pl.ordersBy(t.pk) {
		// The key goes the way of the last column: an order one index
		// holds (an index holds the key after its columns) then reads the
		// index forwards or backwards, with no sort.
		desc := len(pl.order) > 0 && pl.order[len(pl.order)-1].desc
		pl.addTerm(t.pk, desc)
	}

	// The statement orders by the result columns' positions: SQLite finds
	// a named term by comparing it with each result column, which, for an
	// order of hundreds of columns, took the whole execution budget to
	// prepare the statements of a page (see pageSQL). The cursor's binding
	// names the columns, which do not depend on the columns returned.
	var b, by strings.Builder
	b.WriteString(" ORDER BY ")
	by.WriteString(" ORDER BY ")
	for i, o := range pl.order {
		if i > 0 {
			b.WriteString(", ")
			by.WriteString(", ")
		}
		b.WriteString(o.col.quoted)
		by.WriteString(strconv.Itoa(o.at + 1))
		if o.desc {
			b.WriteString(" DESC")
			by.WriteString(" DESC")
		}
	}
	names := b.String()
	pl.orderBy = by.String()

	b.Reset()
	var err error
	if pl.whereArgs, err = opts.Where.appendSQL(t, &b, nil); err != nil {
		return nil, err
	}
	pl.whereSQL = b.String()

	// The binding names the table by id and name (a table dropped and
	// made again is another table), then the order and where as SQL with
	// the where's converted values: equal lists have equal bindings.
	bind := strconv.AppendInt(nil, t.ID, 10)
	for _, part := range []string{strings.ToLower(t.Name), names, pl.whereSQL} {
		bind = appendCursorValue(bind, part)
	}
	for _, v := range pl.whereArgs {
		bind = appendCursorValue(bind, v)
	}
	pl.binding = bind
	return pl, nil
}

// addTerm adds col to the order, refusing it twice.
func (pl *listPlan) addTerm(col *columnInfo, desc bool) error {
	if pl.ordersBy(col) {
		return errorf(ErrInvalidRequest, "order names %q twice", col.Name)
	}
	at := pl.index(col)
	if at < 0 {
		at = len(pl.sel)
		pl.sel = append(pl.sel, col)
	}
	pl.order = append(pl.order, orderTerm{col: col, desc: desc, at: at})
	return nil
}

func (pl *listPlan) ordersBy(col *columnInfo) bool {
	for _, o := range pl.order {
		if o.col == col {
			return true
		}
	}
	return false
}

// index returns the position of col among the statement's columns, or -1.
func (pl *listPlan) index(col *columnInfo) int {
	for i, c := range pl.sel {
		if c == col {
			return i
		}
	}
	return -1
}

// pageStmt is one statement of a page and its arguments.
type pageStmt struct {
	sql  string
	args []any
}

// pageSQL returns the statements reading up to limit rows starting after
// the row whose order values are after (nil: from the first row, skipping
// offset rows). The limit is written into the SQL, not bound: SQLite
// prepares a statement with a bound LIMIT again on every run.
//
// The rows after a row are the union of disjoint ranges, one per column
// of the order (see keysetArms), read one after the other, nearest first,
// until the page is full: each is a seek in an index on its leading
// columns, where a single condition over all the columns would seek on
// the first one only and then read every row that ties with the cursor on
// it. Most pages come whole from the first range.
func (pl *listPlan) pageSQL(after []any, offset, limit int) []pageStmt {
	var b strings.Builder
	if after == nil {
		args := pl.appendSelect(&b, nil, nil, limit)
		b.WriteString(" OFFSET ?")
		return []pageStmt{{b.String(), append(args, offset)}}
	}
	arms := pl.keysetArms(after)
	stmts := make([]pageStmt, len(arms))
	for i := range arms {
		b.Reset()
		args := pl.appendSelect(&b, nil, &arms[i], limit)
		stmts[i] = pageStmt{b.String(), args}
	}
	return stmts
}

// appendSelect writes the SELECT of the plan's columns and where, and arm
// when not nil, in the plan's order, limited to limit rows.
func (pl *listPlan) appendSelect(b *strings.Builder, args []any, arm *keysetArm, limit int) []any {
	b.WriteString("SELECT ")
	for i, col := range pl.sel {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col.quoted)
	}
	b.WriteString(" FROM ")
	b.WriteString(pl.t.quoted)
	b.WriteString(pl.whereSQL)
	args = append(args, pl.whereArgs...)
	if arm != nil {
		if pl.whereSQL == "" {
			b.WriteString(" WHERE ")
		} else {
			b.WriteString(" AND ")
		}
		b.WriteString(arm.sql)
		args = append(args, arm.args...)
	}
	b.WriteString(pl.orderBy)
	b.WriteString(" LIMIT ")
	b.WriteString(strconv.Itoa(limit))
	return args
}

// keysetArm is one range of the rows after a cursor: a condition and its
// arguments.
type keysetArm struct {
	sql  string
	args []any
}

// keysetArms returns the ranges of the rows that come after the row with
// the order values vals, in SQLite's order (NULL first when ascending,
// last when descending), from the nearest to the farthest: for each
// column i of the order, the rows equal to vals on the columns before i
// and after vals[i] on column i,
//
//	o1 IS v1 AND … AND o(i-1) IS v(i-1) AND oi after vi
//
// (a column descending from NULL has nothing after it: no range; one
// descending from a value that can be NULL has two: the smaller values,
// then NULL). The
// order ends with the primary key, so the ranges are disjoint. The shape
// of the SQL depends only on which values are NULL.
func (pl *listPlan) keysetArms(vals []any) []keysetArm {
	var arms []keysetArm
	var eq strings.Builder
	var eqArgs []any
	arm := func(after string, args ...any) {
		arms = append(arms, keysetArm{sql: eq.String() + after, args: append(slices.Clip(eqArgs), args...)})
	}
	for i, o := range pl.order {
		q, v := o.col.quoted, vals[i]
		switch {
		case v == nil && o.desc: // nothing sorts after NULL but NULL
		case v == nil:
			arm(q + " IS NOT NULL")
		case o.desc && o.nullable(): // two ranges: one OR would not seek
			arm(q + " IS NULL")
			arm(q+" < ?", v)
		case o.desc:
			arm(q+" < ?", v)
		default:
			arm(q+" > ?", v)
		}
		if v == nil {
			eq.WriteString(q + " IS NULL AND ")
		} else {
			eq.WriteString(q + " = ? AND ")
			eqArgs = append(eqArgs, v)
		}
	}
	slices.Reverse(arms)
	return arms
}

// listHintBudget bounds the hint of a list over its budget: the list's
// statement is ours and short, so its plan reads in microseconds whatever
// Options.QueryTimeout is.
const listHintBudget = 100 * time.Millisecond

// runList reads the page and the count on the reader c, under the execution
// budget and the memory budget of a query (withinQueryHeap: an order by a
// column no index holds sorts the rows up to the offset); readSchema runs it
// in one read transaction, so the count and the page agree.
func (s *Store) runList(ctx context.Context, c *conn, sc *schema, key []byte, pl *listPlan, opts ListOptions, after []any, enc *jsonRows) (list RecordList, err error) {
	budget, cancel := withBudget(ctx, s.opts.QueryTimeout)
	defer cancel()
	old := c.db.SetInterrupt(budget)
	defer c.db.SetInterrupt(old)
	fail := func(sql string, err error) error {
		switch {
		case errors.Is(err, sqlite3.NOMEM):
			return errQueryHeap
		case errors.Is(err, sqlite3.INTERRUPT) && budget.Err() != nil && ctx.Err() == nil:
			c.db.SetInterrupt(old) // the hint reads the plan under its own budget
			q := &queryRun{s: s, ctx: ctx, budget: budget, c: c, sc: sc, req: QueryRequest{SQL: sql}, hintBudget: listHintBudget}
			return q.budgetError()
		}
		return dbError(ctx, err)
	}
	var start, encoded int // where enc was: a run within more heap starts afresh
	if enc != nil {
		start, encoded = len(enc.buf), enc.rows
	}
	err = s.withinQueryHeap(c, func(heap int64) (err error) {
		defer recoverDriverPanic(c, &err)
		oldHeap := c.db.HardHeapLimit(heap)
		defer c.db.HardHeapLimit(oldHeap)
		if enc != nil {
			enc.buf, enc.rows = enc.buf[:start], encoded
		}
		list, err = s.readList(c, key, pl, opts, after, enc, fail)
		return err
	})
	if errors.Is(err, errQueryHeap) {
		err = errorf(ErrQueryBudgetExceeded, "the list needs more memory than its budget of %d MiB; continue with the cursor (after) rather than an offset, or order by an indexed column", s.opts.QueryMaxMemory>>20)
	}
	return list, err
}

// readList reads the page and the count for runList; fail explains a
// failure of one of its statements.
func (s *Store) readList(c *conn, key []byte, pl *listPlan, opts ListOptions, after []any, enc *jsonRows, fail func(sql string, err error) error) (list RecordList, err error) {
	list = RecordList{Table: pl.t.Name, Rows: []Row{}, Limit: opts.Limit, Offset: opts.Offset}
	maxBytes := s.opts.QueryMaxBytes
	result := newRowsBudget(maxBytes)
	last := make([]any, len(pl.order))
	more := false
	var ( // the JSON keys of the returned columns, when enc is set
		keys  rowKeys
		names []string
	)
	if enc != nil {
		keys, names = pl.rowKeys()
	}
	rows := 0
	read := func(st *sqlite3.Stmt) error {
		if rows == opts.Limit {
			more = true
			return errStopRows
		}
		var (
			row      Row
			rowSize  int // the row's JSON object
			appended bool
		)
		if enc == nil {
			row = make(Row, pl.out)
			sum := 0
			for i, col := range pl.sel[:pl.out] {
				v := columnValue(st, i)
				sum += rowValueSize(col.Name, v)
				row[col.Name] = v
			}
			rowSize = rowJSONSize(sum, pl.out)
		} else {
			rowSize, appended = enc.appendRow(&keys, st, names, result.room())
		}
		if !result.add(rowSize) {
			if appended {
				enc.dropRow(rowSize)
			}
			if rows == 0 {
				return errorf(ErrQueryResultTooLarge, "a row of table %q takes more than the result budget of %d bytes; select fewer columns", pl.t.Name, maxBytes)
			}
			list.Truncated, more = true, true
			return errStopRows
		}
		rows++
		if enc == nil {
			list.Rows = append(list.Rows, row)
		}
		for k, o := range pl.order {
			if row != nil && o.at < pl.out {
				last[k] = row[o.col.Name] // read already
			} else {
				last[k] = columnValue(st, o.at)
			}
		}
		return nil
	}
	// One more row than the limit tells whether a next page exists.
	for _, ps := range pl.pageSQL(after, opts.Offset, opts.Limit+1) {
		if err = c.query(ps.sql, ps.args, read); err != nil {
			if err == errStopRows {
				break
			}
			if ErrorCode(err) == ErrQueryResultTooLarge {
				return list, err
			}
			return list, fail(ps.sql, err)
		}
	}
	if more {
		list.NextCursor = encodeCursor(key, pl.binding, last)
	}
	if opts.Count == CountNone {
		return list, nil
	}
	total, err := s.listCount(c, pl)
	if err != nil {
		return list, fail(`SELECT count(*) FROM `+pl.t.quoted+pl.whereSQL, err)
	}
	list.Total = &total
	return list, nil
}

// rowKeys returns the JSON keys of the returned columns: the table's own
// when they are all of its columns in their order.
func (pl *listPlan) rowKeys() (rowKeys, []string) {
	names := columnNames(pl.sel[:pl.out])
	if pl.out == len(pl.t.columns) && slices.Equal(pl.sel[:pl.out], pl.t.columns) {
		return pl.t.keys, names
	}
	return newRowKeys(names), names
}

// listCount counts the rows the plan's where matches: the kept count when
// there is no where, else COUNT(*).
func (s *Store) listCount(c *conn, pl *listPlan) (n int64, err error) {
	if pl.whereSQL == "" {
		n, ok, err := rowCount(c, pl.t)
		if err != nil || ok {
			return n, err
		}
	}
	_, err = c.queryRow(`SELECT count(*) FROM `+pl.t.quoted+pl.whereSQL, pl.whereArgs, func(st *sqlite3.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	})
	return n, err
}
