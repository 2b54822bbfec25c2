package projectdata

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
)

// Rows encoded straight from SQLite's columns into a caller's buffer, with
// no Row map, no boxed values and no reflection: the same bytes
// encoding/json writes for the Row that scanRow returns (keys in sorted
// order, HTML-safe strings, blobs in base64), so a client cannot tell the
// two paths apart. rowjson_test.go compares them byte for byte.

// rowKeys is what reading a row by its key needs, made once per registry
// load: the SELECT, and the JSON form of the row's keys (the columns in
// the order encoding/json writes a map's keys, sorted, each with its
// encoded `"name":` prefix).
type rowKeys struct {
	order  []int    // column positions, in key order
	prefix [][]byte // prefix[i]: `"name":` of t.columns[order[i]], with its comma
	byKey  string   // the SELECT of a row by primary key (selectSQL)
	// byKeyAndVersion is byKey that also reads the registry version, in one
	// statement (see readByKey): the row's columns (NULL when there is no
	// row), then the version.
	byKeyAndVersion string
	pkAt            int // the key's position among the columns
}

// prepareRowKeys fills t.keys once the table's columns and key are known.
func (t *tableInfo) prepareRowKeys() {
	t.keys = newRowKeys(columnNames(t.columns))
	if t.pk != nil {
		t.keys.byKey = selectSQL(t, ` WHERE `, t.pk.quoted, ` = ?`)
		t.keys.byKeyAndVersion = byKeyAndVersionSQL(t)
		t.keys.pkAt = slices.Index(t.columns, t.pk)
	}
}

// byKeyAndVersionSQL is the SELECT of rowKeys.byKeyAndVersion: the registry's
// one row, joined to the row of t whose key is the parameter.
func byKeyAndVersionSQL(t *tableInfo) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for _, col := range t.columns {
		b.WriteString(`"_pd_row".`)
		b.WriteString(col.quoted)
		b.WriteString(", ")
	}
	b.WriteString(`"_pd_reg".version FROM _pd_registry AS "_pd_reg" LEFT JOIN `)
	b.WriteString(t.quoted)
	b.WriteString(` AS "_pd_row" ON "_pd_row".`)
	b.WriteString(t.pk.quoted)
	b.WriteString(` = ? WHERE "_pd_reg".id = 1`)
	return b.String()
}

// newRowKeys returns the JSON keys of rows whose statement columns are
// named names (no name twice), in that order.
func newRowKeys(names []string) rowKeys {
	k := rowKeys{order: make([]int, len(names))}
	for i := range k.order {
		k.order[i] = i
	}
	slices.SortFunc(k.order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for i, pos := range k.order {
		var p []byte
		if i > 0 {
			p = append(p, ',')
		}
		p = appendHTMLSafeString(p, names[pos])
		k.prefix = append(k.prefix, append(p, ':'))
	}
	return k
}

// jsonRows is where a read encodes its rows as JSON, instead of building
// them: buf[:start] is the caller's, then the result's JSON so far.
type jsonRows struct {
	start int
	buf   []byte
	rows  int // rows encoded
}

// appendRow appends the current row of st as the next element of a JSON
// array of rows (with its comma after the first), keyed by k, and returns
// the size of the row's JSON object, as rowJSONSize counts its Row. A row
// holding a REAL that JSON cannot hold is encoded as its Row is (the REAL
// as text: columnValue).
//
// A large row (its text and blobs past bigRowBytes) that counts more than
// room is not appended (appended is false): its JSON, up to six times its
// text, is never built only to be dropped.
func (r *jsonRows) appendRow(k *rowKeys, st *sqlite3.Stmt, names []string, room int) (size int, appended bool) {
	if size, big := bigRowSize(k, st); big && size > room {
		return size, false
	}
	if r.rows > 0 {
		r.buf = append(r.buf, ',')
	}
	at := len(r.buf)
	var ok bool
	if r.buf, ok = k.appendRow(r.buf, st); !ok {
		row := make(Row, len(names))
		for i, name := range names {
			row[name] = columnValue(st, i)
		}
		b, _ := json.Marshal(row) // columnValue's values always encode
		r.buf = append(r.buf, b...)
	}
	r.rows++
	return len(r.buf) - at, true
}

// checkRowBudget refuses the current row of st, a row of t with its
// columns in table order, when its JSON takes more than max bytes (the
// result budget, Options.QueryMaxBytes): what a list refuses as a single
// row over the budget, a single record's read and update refuse too. The
// row is measured, not encoded, and only when its text and blobs are
// large (bigRowSize).
func (t *tableInfo) checkRowBudget(st *sqlite3.Stmt, max int) error {
	if size, big := bigRowSize(&t.keys, st); big && size > max {
		return errorf(ErrQueryResultTooLarge, "the row of table %q takes %d bytes of JSON, more than the result budget of %d bytes (a list of fewer of its columns can read it)", t.Name, size, max)
	}
	return nil
}

// bigRowBytes is the text and blob bytes from which appendRow measures a
// row before it encodes it.
const bigRowBytes = 64 << 10

// bigRowSize returns the size of the current row of st's JSON object (as
// appendRow), measured without encoding it, when its text and
// blobs take bigRowBytes or more (big); else nothing.
func bigRowSize(k *rowKeys, st *sqlite3.Stmt) (size int, big bool) {
	raw := 0
	for _, pos := range k.order {
		switch st.ColumnType(pos) {
		case sqlite3.TEXT:
			raw += len(st.ColumnRawText(pos))
		case sqlite3.BLOB:
			raw += len(st.ColumnRawBlob(pos))
		}
	}
	if raw < bigRowBytes {
		return 0, false
	}
	size = len("{}")
	var digits [20]byte
	for i, pos := range k.order {
		size += len(k.prefix[i])
		switch st.ColumnType(pos) {
		case sqlite3.INTEGER:
			size += len(strconv.AppendInt(digits[:0], st.ColumnInt64(pos), 10))
		case sqlite3.FLOAT:
			size += realJSONSize(st.ColumnFloat(pos))
		case sqlite3.TEXT:
			size += jsonStringSize(st.ColumnRawText(pos))
		case sqlite3.BLOB:
			if n := len(st.ColumnRawBlob(pos)); n > 0 {
				size += (n+2)/3*4 + 2
			} else {
				size += 4
			}
		default:
			size += 4
		}
	}
	return size, true
}

// dropRow removes the row appendRow appended last, whose JSON object takes
// size bytes.
func (r *jsonRows) dropRow(size int) {
	r.rows--
	r.buf = r.buf[:len(r.buf)-size]
	if r.rows > 0 {
		r.buf = r.buf[:len(r.buf)-1] // its comma
	}
}

// appendRowJSON appends the current row of a statement made by selectSQL
// for t as a JSON object. It reports false, having appended nothing, for a
// row that encoding/json would refuse (a non-finite REAL).
func (t *tableInfo) appendRowJSON(dst []byte, st *sqlite3.Stmt) ([]byte, bool) {
	return t.keys.appendRow(dst, st)
}

// appendRow appends the current row of st, whose columns are the ones k
// was made for, as a JSON object; as appendRowJSON.
func (k *rowKeys) appendRow(dst []byte, st *sqlite3.Stmt) ([]byte, bool) {
	start := len(dst)
	dst = append(dst, '{')
	for i, pos := range k.order {
		dst = append(dst, k.prefix[i]...)
		var ok bool
		if dst, ok = appendColumnJSON(dst, st, pos); !ok {
			return dst[:start], false
		}
	}
	return append(dst, '}'), true
}

// appendColumnJSON appends column i of st's current row as encoding/json
// writes the value st.Columns reads (int64, float64, string, []byte, nil).
func appendColumnJSON(dst []byte, st *sqlite3.Stmt, i int) ([]byte, bool) {
	switch st.ColumnType(i) {
	case sqlite3.INTEGER:
		return strconv.AppendInt(dst, st.ColumnInt64(i), 10), true
	case sqlite3.FLOAT:
		return appendRealJSON(dst, st.ColumnFloat(i))
	case sqlite3.TEXT:
		return appendHTMLSafeBytes(dst, st.ColumnRawText(i)), true
	case sqlite3.BLOB:
		b := st.ColumnRawBlob(i)
		if len(b) == 0 {
			break // st.Columns reads an empty blob as a nil []byte: null
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, b)
		return append(dst, '"'), true
	}
	return append(dst, "null"...), true
}

// appendRealJSON appends f as a row's value: as appendJSONFloat, with ".0"
// after a number written without a fraction or an exponent (see
// Row.MarshalJSON).
func appendRealJSON(dst []byte, f float64) ([]byte, bool) {
	dst, ok := appendJSONFloat(dst, f)
	if ok && writtenWithoutFraction(f) {
		dst = append(dst, ".0"...)
	}
	return dst, ok
}

// writtenWithoutFraction reports whether appendJSONFloat writes the finite
// f without a fraction or an exponent: f is integral, and below 1e21 (from
// there it takes an exponent).
func writtenWithoutFraction(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1e21
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest form, in exponent notation below 1e-6 and from 1e21, with the
// exponent's leading zero dropped. NaN and ±Inf are refused.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	if format == 'f' {
		if b, ok := appendShortFixed(dst, f); ok {
			return b, true
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as in encoding/json.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendHTMLSafeString appends s as encoding/json writes a string with
// HTML escaping on (as json.Marshal and the HTTP API's encoder do).
func appendHTMLSafeString(dst []byte, s string) []byte {
	return appendHTMLSafe(dst, s)
}

// appendHTMLSafeBytes is appendHTMLSafeString for text held in bytes.
func appendHTMLSafeBytes(dst []byte, s []byte) []byte {
	return appendHTMLSafe(dst, s)
}

// appendHTMLSafe escapes as encoding/json: quotes, backslashes and control
// characters (\b \f \n \r \t by name, others as \u00XX), <, > and & as
// \u003c \u003e \u0026, U+2028 and U+2029, and each byte of invalid UTF-8
// as \ufffd.
func appendHTMLSafe[S string | []byte](dst []byte, s S) []byte {
	return appendJSONText(dst, s, true)
}

// appendJSONText is appendHTMLSafe, but for <, > and &, which it escapes
// only when html is set.
func appendJSONText[S string | []byte](dst []byte, s S, html bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		// A conversion of at most 4 bytes that does not escape: no allocation.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendRecordJSON appends the record FindRecord returns, encoded as JSON,
// to dst: the same bytes as json.Marshal of that Record
// ({"table":…,"row":{…}}), read straight from SQLite's columns without
// building the Row (no allocation per value). On error dst is returned as
// it was.
//
// Errors: as GetRecord; a row encoding/json cannot encode (a non-finite
// REAL) is an error, as it is for json.Marshal.
func (s *Store) AppendRecordJSON(ctx context.Context, dst []byte, slug, table string, id any) ([]byte, error) {
	out := dst
	err := s.withProject(ctx, slug, OpGetRecord, func(p *project) error {
		return p.readByKey(ctx, table, id, func(t *tableInfo, st *sqlite3.Stmt) error {
			if err := t.checkRowBudget(st, s.opts.QueryMaxBytes); err != nil {
				return err
			}
			out = append(dst, `{"table":`...)
			out = appendHTMLSafeString(out, t.Name)
			out = append(out, `,"row":`...)
			var ok bool
			if out, ok = t.appendRowJSON(out, st); !ok {
				// What encoding/json says of the same row.
				row, err := t.scanRow(st, make([]any, st.ColumnCount()))
				if err != nil {
					return err
				}
				_, err = json.Marshal(row)
				return err
			}
			out = append(out, '}')
			return nil
		})
	})
	if err != nil {
		return dst, err
	}
	return out, nil
}
