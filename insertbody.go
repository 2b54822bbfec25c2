package projectdata

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/pkg/errors"
)

// insertBody is an insert body as the stream decodes it for InsertJSON:
// each row a run of cells (key, scalar) in the order the body gives them,
// with no map per row and no string per key or per number. DecodeRows
// reads the same bodies into Rows; planBody checks the cells against a
// table as planInsert checks Rows.
type insertBody struct {
	keys  []string         // the keys, by id
	ids   map[string]int32 // the ids of interned keys (at most maxInternedKeys)
	cells []bodyCell
	ends  []int32 // row i's cells are cells[ends[i]:ends[i+1]]
	nums  []byte  // the text of the numbers, one after another

	// For the row being read: 1 + its index in the row where a key id
	// was last seen, and its cell there.
	seenRow, seenCell []int32
}

// bodyCell is one key and value of a row.
type bodyCell struct {
	key  int32
	kind cellKind
	// A number's text is nums[from:to]; a string's value is str, plain
	// when it was printable ASCII in the body (so valid UTF-8, no NUL).
	plain    bool
	from, to int32
	str      string
}

// cellKind is the JSON kind of a cell's value.
type cellKind uint8

const (
	cellNull cellKind = iota
	cellFalse
	cellTrue
	cellNumber
	cellString
)

// rowCount returns the number of rows.
func (ib *insertBody) rowCount() int { return len(ib.ends) - 1 }

// row returns the cells of row i.
func (ib *insertBody) row(i int) []bodyCell { return ib.cells[ib.ends[i]:ib.ends[i+1]] }

// number returns the text of a number cell.
func (ib *insertBody) number(c *bodyCell) []byte { return ib.nums[c.from:c.to] }

// value returns a cell's value as DecodeRows gives it: nil, bool,
// json.Number or string.
func (ib *insertBody) value(c *bodyCell) any {
	switch c.kind {
	case cellFalse:
		return false
	case cellTrue:
		return true
	case cellNumber:
		return json.Number(ib.number(c))
	case cellString:
		return c.str
	}
	return nil
}

// rows returns the body as DecodeRows would have decoded it.
func (ib *insertBody) rows() []Row {
	rows := make([]Row, ib.rowCount())
	for i := range rows {
		cells := ib.row(i)
		rows[i] = make(Row, len(cells))
		for j := range cells {
			rows[i][ib.keys[cells[j].key]] = ib.value(&cells[j])
		}
	}
	return rows
}

// MarshalJSON encodes the body as its Rows: the idempotency fingerprint of
// InsertJSON's arguments is that of Insert's for the same rows.
func (ib *insertBody) MarshalJSON() ([]byte, error) { return json.Marshal(ib.rows()) }

// insertBodies keeps the slices of finished insert bodies for the next
// ones: a body of 1,000 rows would otherwise grow (and the collector clear)
// its cells anew each time.
var insertBodies = sync.Pool{New: func() any { return new(insertBody) }}

// maxKeptCells and maxKeptNums bound the cells and the number text of a
// body kept for the next one (at most 512 KiB and 256 KiB).
const (
	maxKeptCells = 1 << 14
	maxKeptNums  = 256 << 10
)

// newInsertBody returns an empty body, with the slices of a finished one.
func newInsertBody() *insertBody {
	ib := insertBodies.Get().(*insertBody)
	ib.ends = append(ib.ends, 0)
	return ib
}

// release gives the body's slices back for another body; nothing may use
// the body after.
func (ib *insertBody) release() {
	if cap(ib.cells) > maxKeptCells || cap(ib.nums) > maxKeptNums || len(ib.keys) > maxInternedKeys {
		return
	}
	clear(ib.cells) // no strings kept alive
	clear(ib.keys)
	clear(ib.ids)
	clear(ib.seenRow)
	*ib = insertBody{keys: ib.keys[:0], ids: ib.ids, cells: ib.cells[:0], ends: ib.ends[:0], nums: ib.nums[:0], seenRow: ib.seenRow[:0], seenCell: ib.seenCell[:0]}
	insertBodies.Put(ib)
}

// insertBody reads an insert body (see rows for its shape and limits).
func (js *jsonStream) insertBody(maxRows int) (*insertBody, error) {
	tok, err := js.insertStart()
	if err != nil {
		return nil, err
	}
	ib := newInsertBody()
	switch tok {
	case json.Delim('{'):
		return ib, js.bodyRow(ib, "the row")
	case json.Delim('['):
		err := js.array(func(i int) error {
			if i >= maxRows {
				return errorf(ErrTooManyRows, "an insert takes at most %d rows", maxRows)
			}
			tok, err := js.token()
			if err != nil {
				return err
			}
			if tok != json.Delim('{') {
				return errorf(ErrInvalidRequest, "row %d must be a JSON object of column name to value", i)
			}
			return js.bodyRow(ib, "")
		})
		return ib, err
	}
	ib.release()
	return nil, errorf(ErrInvalidRequest, "the body must be a row object or an array of row objects")
}

// bodyRow reads the rest of a row object, whose '{' was read, into ib's
// cells. A key given twice keeps its last value, as in a Row. what names
// the row in errors; "" is "row N".
func (js *jsonStream) bodyRow(ib *insertBody, what string) error {
	row := int32(ib.rowCount()) + 1
	start := len(ib.cells)
	distinct := 0
	// The rows of a body mostly have the same keys in the same order: the
	// previous row's key at the same place is the likely one.
	var like []bodyCell
	if n := len(ib.ends); n > 1 {
		like = ib.cells[ib.ends[n-2]:ib.ends[n-1]]
	}
	err := js.members(func() error {
		guess := int32(-1)
		if i := len(ib.cells) - start; i < len(like) {
			guess = like[i].key
		}
		id, err := ib.keyID(js, guess)
		if err != nil {
			return err
		}
		ib.cells = append(ib.cells, bodyCell{key: id})
		return nil
	}, func() error {
		c := &ib.cells[len(ib.cells)-1]
		if err := js.cellValue(ib, c); err != nil {
			if err == errNotScalar {
				return errorf(ErrInvalidColumnValue, "%s: column %.80q: an object or an array is not a column value", rowName(what, row), ib.keys[c.key])
			}
			return err
		}
		if prev := ib.earlier(c.key, row, start); prev >= 0 {
			ib.cells[prev] = *c // a key given again: its last value counts
			ib.cells = ib.cells[:len(ib.cells)-1]
			return nil
		}
		distinct++
		if distinct > maxColumns {
			return errorf(ErrInvalidRequest, "%s has more than %d columns", rowName(what, row), maxColumns)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ib.ends = append(ib.ends, int32(len(ib.cells)))
	return nil
}

// rowName is what, or "row N" for the row numbered row (from 1).
func rowName(what string, row int32) string {
	if what != "" {
		return what
	}
	return "row " + strconv.Itoa(int(row)-1)
}

// earlier returns the index of the cell of key id in the row being read
// (numbered row from 1, its cells from start) before the last one, or -1;
// and records the last one as the key's.
func (ib *insertBody) earlier(id, row int32, start int) int {
	last := int32(len(ib.cells) - 1)
	if int(id) >= len(ib.seenRow) {
		// A key beyond the interned ones has an id of its own each time:
		// look for its name among the row's cells.
		for j := start; j < int(last); j++ {
			if ib.keys[ib.cells[j].key] == ib.keys[id] {
				return j
			}
		}
		return -1
	}
	prev := -1
	if ib.seenRow[id] == row {
		prev = int(ib.seenCell[id])
	} else {
		ib.seenRow[id], ib.seenCell[id] = row, last
	}
	return prev
}

// keyID reads an object key and returns its id: the same key in every row
// has one id, up to maxInternedKeys keys; beyond, each is new. guess is
// the id the key likely has, or -1.
func (ib *insertBody) keyID(js *jsonStream, guess int32) (int32, error) {
	raw, slow, err := js.quoted()
	if err != nil {
		return 0, err
	}
	name := raw[1 : len(raw)-1]
	if !slow && guess >= 0 && int(guess) < len(ib.seenRow) && ib.keys[guess] == string(name) {
		return guess, nil
	}
	var k string
	if slow {
		if k, err = unquote(raw); err != nil {
			return 0, err
		}
		if id, ok := ib.ids[k]; ok {
			return id, nil
		}
	} else {
		if id, ok := ib.ids[string(name)]; ok {
			return id, nil
		}
		k = string(name)
	}
	id := int32(len(ib.keys))
	ib.keys = append(ib.keys, k)
	if len(ib.ids) < maxInternedKeys {
		if ib.ids == nil {
			ib.ids = map[string]int32{}
		}
		ib.ids[k] = id
		ib.seenRow = append(ib.seenRow, 0)
		ib.seenCell = append(ib.seenCell, 0)
	}
	return id, nil
}

// cellValue reads a scalar into c. An object or an array is errNotScalar.
func (js *jsonStream) cellValue(ib *insertBody, c *bodyCell) error {
	ch, err := js.next()
	if err != nil {
		return err
	}
	switch {
	case ch == '"':
		raw, slow, err := js.quoted()
		if err != nil {
			return err
		}
		c.kind, c.plain = cellString, !slow
		if slow {
			c.str, err = unquote(raw)
			return err
		}
		c.str = string(raw[1 : len(raw)-1])
		return nil
	case ch == '-' || (ch >= '0' && ch <= '9'):
		n, err := js.numberText()
		if err != nil {
			return err
		}
		c.kind, c.from = cellNumber, int32(len(ib.nums))
		ib.nums = append(ib.nums, n...)
		c.to = int32(len(ib.nums))
		return nil
	}
	v, err := js.scalar()
	if err != nil {
		return err
	}
	switch v {
	case true:
		c.kind = cellTrue
	case false:
		c.kind = cellFalse
	default:
		c.kind = cellNull
	}
	return nil
}

// InsertJSON inserts the rows of an insert body read from r: one JSON row
// object or an array of them, as DecodeRows reads it (with the Store's
// Options.MaxInsertRows). It is Insert(DecodeRows(r)) with the same
// results, errors and idempotency fingerprint, made faster for large
// bodies: the rows are checked and converted straight from the decoded
// cells, with no Row map per row.
//
// Errors: those of DecodeRows, then those of Insert.
func (s *Store) InsertJSON(ctx context.Context, slug, table string, r io.Reader) (InsertResult, error) {
	js := newJSONStream(r)
	ib, err := js.insertBody(s.opts.MaxInsertRows)
	if err == nil {
		err = js.end()
	}
	js.release()
	if ib != nil {
		defer ib.release()
	}
	if err != nil {
		return InsertResult{}, s.refuseIdempotent(ctx, slug, OpInsertRecords, []any{table}, jsonError(err))
	}
	return s.insert(ctx, slug, table, ib.rowCount(), ib, func(t *tableInfo) (*insertPlan, error) {
		return planBody(t, ib)
	})
}

// planBody checks the rows of ib against t and plans their insert, as
// planInsert does for Rows, with the same errors. A row with errors in
// several columns names the first in the body's order.
func planBody(t *tableInfo, ib *insertBody) (*insertPlan, error) {
	n := ib.rowCount()
	perRow := 0
	if n > 0 {
		perRow = len(ib.row(0))
	}
	pb := newPlanBuilder(t, n, perRow)
	// By key id, once found: the key's column and the column's place in
	// the table. Two keys (such as "a" and "A") may name one column, which
	// a row may not give twice: seen holds, by place, 1 + the last row
	// that gave the column.
	cols := make([]*columnInfo, len(ib.keys))
	places := make([]int32, len(ib.keys))
	seen := make([]int32, len(t.columns))
	var stack [16]colValue // a row's values, without an allocation for most rows
	buf := stack[:0]
	for i := range n {
		buf = buf[:0]
		sorted := true // by column id, as the plan keeps a row's values
		cells := ib.row(i)
		for j := range cells {
			c := &cells[j]
			col := cols[c.key]
			if col == nil {
				var err error
				if col, err = t.columnNamed(ib.keys[c.key]); err != nil {
					return nil, errors.WithMessagef(err, "row %d", i)
				}
				cols[c.key], places[c.key] = col, int32(slices.Index(t.columns, col))
			}
			if p := places[c.key]; seen[p] == int32(i)+1 {
				return nil, errors.WithMessagef(errorf(ErrInvalidRequest, "column %q is given twice", col.Name), "row %d", i)
			} else {
				seen[p] = int32(i) + 1
			}
			x, err := colType(col.Type).convertCell(ib, c)
			if err != nil {
				return nil, errors.WithMessagef(errors.WithMessagef(err, "column %q", col.Name), "row %d", i)
			}
			if len(buf) > 0 && buf[len(buf)-1].col.ID > col.ID {
				sorted = false
			}
			buf = append(buf, colValue{col, x})
		}
		if !sorted {
			slices.SortFunc(buf, func(a, b colValue) int { return cmp.Compare(a.col.ID, b.col.ID) })
		}
		pb.add(i, buf)
	}
	return pb.pl, nil
}

// convertCell is convert for the value of a cell, without making it an
// interface value first.
func (t colType) convertCell(ib *insertBody, c *bodyCell) (sqlValue, error) {
	var (
		x   any
		err error
	)
	switch c.kind {
	case cellString:
		if t == TypeText && c.plain {
			return textValue(c.str), nil // printable ASCII: valid, no NUL
		}
		x, err = t.convertString(c.str)
	case cellNumber:
		num := ib.number(c)
		switch t {
		case TypeInteger, TypeNumeric:
			if n, ok := smallInt(num); ok {
				return intValue(n), nil
			}
		case TypeReal:
			if fewDigits(string(num)) {
				if f, err := strconv.ParseFloat(string(num), 64); err == nil {
					return realValue(storedReal(f)), nil
				}
			}
		}
		s := string(num)
		x, err = t.convertNumber(s, false)
	case cellTrue:
		x, err = t.convert(true)
	case cellFalse:
		x, err = t.convert(false)
	}
	return sqlValueOf(x), err
}

// smallInt parses a number of at most 18 digits and no fraction or
// exponent, which int64 always holds.
func smallInt(num []byte) (int64, bool) {
	neg := len(num) > 0 && num[0] == '-'
	if neg {
		num = num[1:]
	}
	if len(num) == 0 || len(num) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// AppendJSON appends r to dst as JSON: the same bytes as json.Marshal(r),
// without reflection over the ids.
func (r InsertResult) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"table":`...)
	dst = appendHTMLSafeString(dst, r.Table)
	dst = append(dst, `,"inserted_count":`...)
	dst = strconv.AppendInt(dst, int64(r.InsertedCount), 10)
	dst = append(dst, `,"inserted_ids":`...)
	if r.InsertedIDs == nil {
		return append(dst, "null}"...), nil
	}
	dst = append(dst, '[')
	for i, id := range r.InsertedIDs {
		if i > 0 {
			dst = append(dst, ',')
		}
		ok := true
		switch id := id.(type) {
		case int64:
			dst = strconv.AppendInt(dst, id, 10)
		case string:
			dst = appendHTMLSafeString(dst, id)
		case float64:
			dst, ok = appendJSONFloat(dst, id)
		case nil:
			dst = append(dst, "null"...)
		default:
			ok = false
		}
		if !ok {
			b, err := json.Marshal(id)
			if err != nil {
				return dst[:start], err
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, "]}"...), nil
}
