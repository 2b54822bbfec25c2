package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/errors"

	pd "github.com/projectdata/projectdata"
)

// GetProject returns the project and its number of tables.
func (c *Client) GetProject(ctx context.Context, slug string) (pd.Project, int, error) {
	var out struct {
		Project    pd.Project `json:"project"`
		TableCount int        `json:"table_count"`
	}
	err := c.do(ctx, request{method: "GET", path: project(slug)}, &out)
	return out.Project, out.TableCount, err
}

// RenameProject sets the project's display name.
func (c *Client) RenameProject(ctx context.Context, slug, name string) (pd.Project, error) {
	var out struct {
		Project pd.Project `json:"project"`
	}
	err := c.do(ctx, request{method: "PATCH", path: project(slug), body: map[string]string{"project_name": name}, idempotent: true}, &out)
	return out.Project, err
}

// CreateToken creates a token; its secret is in the answer only. It is
// not retried: the server refuses an Idempotency-Key on token creation,
// and a key on ctx is sent so that it is refused (ErrInvalidRequest) as
// the Store refuses it.
func (c *Client) CreateToken(ctx context.Context, slug string, req pd.NewToken) (pd.CreatedToken, error) {
	// An empty role or type is the default, which the API takes from an
	// absent field: its document has no empty role.
	body := map[string]any{"token_name": req.Name}
	if req.Role != "" {
		body["role"] = req.Role
	}
	if req.Type != "" {
		body["token_type"] = req.Type
	}
	if req.ExpiresAt != nil {
		body["expires_at"] = req.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	var out struct {
		Token pd.CreatedToken `json:"token"`
	}
	err := c.do(ctx, request{method: "POST", path: project(slug, "auth", "tokens"), body: body, sendKey: true}, &out)
	return out.Token, err
}

// ListTokens lists the project's tokens, never their secrets.
func (c *Client) ListTokens(ctx context.Context, slug string) ([]pd.Token, error) {
	var out struct {
		Tokens []pd.Token `json:"tokens"`
	}
	err := c.do(ctx, request{method: "GET", path: project(slug, "auth", "tokens")}, &out)
	return out.Tokens, err
}

// Tokens iterates over the project's tokens, never their secrets. The
// route answers every token at once (it takes no parameters), so the
// iteration reads that one answer, which Options.MaxResponseBytes bounds.
// An error ends the iteration, as the last pair.
func (c *Client) Tokens(ctx context.Context, slug string) iter.Seq2[pd.Token, error] {
	return func(yield func(pd.Token, error) bool) {
		toks, err := c.ListTokens(ctx, slug)
		if err != nil {
			yield(pd.Token{}, err)
			return
		}
		for _, t := range toks {
			if !yield(t, nil) {
				return
			}
		}
	}
}

// RevokeToken revokes the token with id.
func (c *Client) RevokeToken(ctx context.Context, slug string, id int64) (pd.Token, error) {
	var out struct {
		Token pd.Token `json:"token"`
	}
	err := c.do(ctx, request{method: "DELETE", path: project(slug, "auth", "tokens", strconv.FormatInt(id, 10)), idempotent: true}, &out)
	return out.Token, err
}

// ListTables lists the project's tables.
func (c *Client) ListTables(ctx context.Context, slug string) ([]pd.Table, error) {
	var out struct {
		Tables []pd.Table `json:"tables"`
	}
	// The specification: a missing or unusable token may answer 404
	// without an envelope here.
	err := c.do(ctx, request{method: "GET", path: project(slug, "table"), notFound: pd.ErrInvalidToken}, &out)
	return out.Tables, err
}

// GetTable returns a table by numeric id or name. No route answers one
// table: the table's columns are read first, which names it as the Store
// does (with the Store's errors), then the project's tables.
func (c *Client) GetTable(ctx context.Context, slug, table string) (pd.Table, error) {
	name, _, err := c.ListColumns(ctx, slug, table)
	if err != nil {
		return pd.Table{}, err
	}
	tables, err := c.ListTables(ctx, slug)
	if err != nil {
		return pd.Table{}, err
	}
	for _, t := range tables {
		if t.Name == name {
			return t, nil
		}
	}
	return pd.Table{}, &pd.Error{Code: pd.ErrTableNotFound, Message: fmt.Sprintf("table %q was deleted while it was read", name)}
}

// columnBody is a column definition as the API takes it.
func columnBody(d pd.ColumnDef) (map[string]any, error) {
	b := map[string]any{"column_name": d.Name, "is_nullable": !d.NotNull, "is_unique": d.Unique, "is_primary": d.Primary}
	if d.Type != "" {
		b["column_type"] = d.Type
	}
	if d.Default != nil {
		if err := pd.CheckValue(d.Default); err != nil {
			// JSON would carry another value, which the server would take.
			return nil, errors.WithMessagef(err, "default of column %q", d.Name)
		}
		b["default_value"] = wireValue(d.Default)
	}
	return b, nil
}

// CreateTable creates a table with its columns.
func (c *Client) CreateTable(ctx context.Context, slug string, def pd.TableDef) (pd.Table, []pd.Column, error) {
	cols := make([]map[string]any, len(def.Columns))
	for i, d := range def.Columns {
		var err error
		if cols[i], err = columnBody(d); err != nil {
			return pd.Table{}, nil, err
		}
	}
	body := map[string]any{"table_name": def.Name, "columns": cols}
	if def.DisplayName != nil {
		body["display_name"] = *def.DisplayName
	}
	var out struct {
		Table   pd.Table    `json:"table"`
		Columns []pd.Column `json:"columns"`
	}
	err := c.do(ctx, request{method: "POST", path: project(slug, "table"), body: body, idempotent: true}, &out)
	return out.Table, out.Columns, err
}

// UpdateTable changes the table's display name.
func (c *Client) UpdateTable(ctx context.Context, slug, table string, upd pd.TableUpdate) (pd.Table, error) {
	body := map[string]any{}
	if upd.DisplayName.Set {
		body["display_name"] = upd.DisplayName.To
	}
	var out struct {
		Table pd.Table `json:"table"`
	}
	err := c.do(ctx, request{method: "PATCH", path: project(slug, "table", seg(table)), body: body, idempotent: true}, &out)
	return out.Table, err
}

// DeleteTable deletes the table and its rows, returning its name.
func (c *Client) DeleteTable(ctx context.Context, slug, table string) (string, error) {
	var out struct {
		TableName string `json:"table_name"`
	}
	err := c.do(ctx, request{method: "DELETE", path: project(slug, "table", seg(table)), idempotent: true}, &out)
	return out.TableName, err
}

// ListColumns returns the table's stored name and its columns.
func (c *Client) ListColumns(ctx context.Context, slug, table string) (string, []pd.Column, error) {
	var out struct {
		Table   string      `json:"table"`
		Columns []pd.Column `json:"columns"`
	}
	err := c.do(ctx, request{method: "GET", path: project(slug, "column", seg(table))}, &out)
	return out.Table, out.Columns, err
}

type columnAnswer struct {
	Column pd.Column `json:"column"`
}

// GetColumn returns one column.
func (c *Client) GetColumn(ctx context.Context, slug, table, column string) (pd.Column, error) {
	var out columnAnswer
	err := c.do(ctx, request{method: "GET", path: project(slug, "column", seg(table), seg(column))}, &out)
	return out.Column, err
}

// AddColumn adds a column to the table.
func (c *Client) AddColumn(ctx context.Context, slug, table string, def pd.ColumnDef) (pd.Column, error) {
	body, err := columnBody(def)
	if err != nil {
		return pd.Column{}, err
	}
	var out columnAnswer
	err = c.do(ctx, request{method: "POST", path: project(slug, "column", seg(table)), body: body, idempotent: true}, &out)
	return out.Column, err
}

// UpdateColumn renames a column or changes its type, nullability, default
// or uniqueness: the fields of upd that are set.
func (c *Client) UpdateColumn(ctx context.Context, slug, table, column string, upd pd.ColumnUpdate) (pd.Column, error) {
	body := map[string]any{}
	if upd.Name.Set {
		body["new_column_name"] = upd.Name.To
	}
	if upd.Type.Set {
		body["column_type"] = upd.Type.To
	}
	if upd.Nullable.Set {
		body["is_nullable"] = upd.Nullable.To
	}
	if upd.Default.Set {
		if err := pd.CheckValue(upd.Default.To); err != nil {
			// JSON would carry another value, which the server would take.
			return pd.Column{}, errors.WithMessagef(err, "default of column %q", column)
		}
		body["default_value"] = wireValue(upd.Default.To)
	}
	if upd.Unique.Set {
		body["is_unique"] = upd.Unique.To
	}
	var out columnAnswer
	err := c.do(ctx, request{method: "PATCH", path: project(slug, "column", seg(table), seg(column)), body: body, idempotent: true}, &out)
	return out.Column, err
}

// Insert inserts rows into the table in one transaction.
func (c *Client) Insert(ctx context.Context, slug, table string, rows []pd.Row) (pd.InsertResult, error) {
	if rows == nil {
		rows = []pd.Row{}
	}
	cloned := false
	for i, r := range rows {
		if err := checkRow(i, r); err != nil {
			return pd.InsertResult{}, err
		}
		if r == nil { // a row of defaults, as for the Store; JSON would say null
			if !cloned {
				rows, cloned = slices.Clone(rows), true // the caller's rows stay as they are
			}
			rows[i] = pd.Row{}
		}
	}
	return c.insert(ctx, request{body: rows}, slug, table)
}

// InsertJSON inserts the rows of an insert body read from r: one JSON row
// object or an array of them, sent as read. r is read whole first (a
// retry sends it again).
func (c *Client) InsertJSON(ctx context.Context, slug, table string, r io.Reader) (pd.InsertResult, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return pd.InsertResult{}, errors.Wrap(err, "projectdata client: read the insert body")
	}
	return c.insert(ctx, request{rawBody: body}, slug, table)
}

// insert sends req, with its body set, as an insert into the table.
func (c *Client) insert(ctx context.Context, req request, slug, table string) (pd.InsertResult, error) {
	req.method, req.path, req.idempotent = "POST", project(slug, "records", seg(table)), true
	var out pd.InsertResult
	err := c.do(ctx, req, &out)
	for i, id := range out.InsertedIDs {
		out.InsertedIDs[i] = plain(id)
	}
	return out, err
}

// ListRecords lists rows of the table as opts selects, orders and pages
// them.
func (c *Client) ListRecords(ctx context.Context, slug, table string, opts pd.ListOptions) (pd.RecordList, error) {
	q := url.Values{}
	if len(opts.Where) > 0 {
		where, err := wireWhere(opts.Where)
		if err != nil {
			return pd.RecordList{}, err
		}
		w, err := encodeJSON(where)
		if err != nil {
			return pd.RecordList{}, &pd.Error{Code: pd.ErrInvalidWhere, Message: "encode where: " + err.Error()}
		}
		q.Set("where", string(w))
	}
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	columns, err := nameList(opts.Columns, func(name string) error {
		return &pd.Error{Code: pd.ErrColumnNotFound, Message: fmt.Sprintf("column %.80q does not exist in table %q", name, table)}
	})
	if err != nil {
		return pd.RecordList{}, err
	}
	set("order", opts.Order)
	set("columns", columns)
	set("after", string(opts.After))
	set("count", string(opts.Count))
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Offset != 0 {
		q.Set("offset", strconv.Itoa(opts.Offset))
	}
	var out pd.RecordList
	err = c.do(ctx, request{method: "GET", path: project(slug, "records", seg(table)), query: q}, &out)
	plainRows(out.Rows)
	return out, err
}

// Rows iterates over the rows of a table that opts selects, in its order,
// reading a page (opts.Limit rows) at a time with the cursor, so memory
// stays bounded by one page whatever the table's size. opts.Count is
// ignored. An error ends the iteration, as the last pair.
func (c *Client) Rows(ctx context.Context, slug, table string, opts pd.ListOptions) iter.Seq2[pd.Row, error] {
	return pd.RowsOfPages(opts, func(opts pd.ListOptions) (pd.RecordList, error) {
		return c.ListRecords(ctx, slug, table, opts)
	})
}

// GetRecord returns the row with primary key id.
func (c *Client) GetRecord(ctx context.Context, slug, table string, id any) (pd.Row, error) {
	rec, err := c.FindRecord(ctx, slug, table, id)
	return rec.Row, err
}

// FindRecord returns the row with primary key id and the table's stored
// name.
func (c *Client) FindRecord(ctx context.Context, slug, table string, id any) (pd.Record, error) {
	path, err := recordPath(slug, table, id)
	if err != nil {
		return pd.Record{}, err
	}
	var out pd.Record
	err = c.do(ctx, request{method: "GET", path: path, notFound: pd.ErrRecordNotFound}, &out)
	plainRows([]pd.Row{out.Row})
	return out, err
}

// UpdateRecord changes columns of the row with primary key id and returns
// the row as stored.
func (c *Client) UpdateRecord(ctx context.Context, slug, table string, id any, data pd.Row) (pd.Row, error) {
	rec, err := c.UpdateFoundRecord(ctx, slug, table, id, data)
	return rec.Row, err
}

// UpdateFoundRecord is UpdateRecord that also returns the table's name as
// stored.
func (c *Client) UpdateFoundRecord(ctx context.Context, slug, table string, id any, data pd.Row) (pd.Record, error) {
	path, err := recordPath(slug, table, id)
	if err != nil {
		return pd.Record{}, err
	}
	if err := checkRow(-1, data); err != nil {
		return pd.Record{}, err
	}
	var out pd.Record
	err = c.do(ctx, request{method: "PATCH", path: path, body: data, idempotent: true, notFound: pd.ErrRecordNotFound}, &out)
	plainRows([]pd.Row{out.Row})
	return out, err
}

// DeleteRecord deletes the row with primary key id.
func (c *Client) DeleteRecord(ctx context.Context, slug, table string, id any) (pd.DeleteResult, error) {
	path, err := recordPath(slug, table, id)
	if err != nil {
		return pd.DeleteResult{}, err
	}
	var out pd.DeleteResult
	err = c.do(ctx, request{method: "DELETE", path: path, idempotent: true, notFound: pd.ErrRecordNotFound}, &out)
	return out, err
}

// UpdateRecords changes the rows upd.Where matches.
func (c *Client) UpdateRecords(ctx context.Context, slug, table string, upd pd.BulkUpdate) (pd.BulkResult, error) {
	if err := checkRow(-1, upd.Data); err != nil {
		return pd.BulkResult{}, err
	}
	var err error
	if upd.Where, err = wireWhere(upd.Where); err != nil {
		return pd.BulkResult{}, err
	}
	var out pd.BulkResult
	err = c.do(ctx, request{method: "PATCH", path: project(slug, "records", seg(table)), body: upd, idempotent: true}, &out)
	return out, err
}

// DeleteRecords deletes the rows del.Where matches.
func (c *Client) DeleteRecords(ctx context.Context, slug, table string, del pd.BulkDelete) (pd.BulkResult, error) {
	var err error
	if del.Where, err = wireWhere(del.Where); err != nil {
		return pd.BulkResult{}, err
	}
	var out pd.BulkResult
	err = c.do(ctx, request{method: "DELETE", path: project(slug, "records", seg(table)), body: del, idempotent: true}, &out)
	return out, err
}

// Query runs one read-only SQL statement. Args and Named both given are
// refused before any request, with the Store's error: a body's params are
// one or the other.
func (c *Client) Query(ctx context.Context, slug string, req pd.QueryRequest) (pd.QueryResult, error) {
	if len(req.Args) > 0 && len(req.Named) > 0 {
		return pd.QueryResult{}, &pd.Error{Code: pd.ErrInvalidRequest, Message: "params are either positional or named, not both"}
	}
	// The values the Store refuses (a time.Time, a uint64, a []byte, …)
	// JSON would carry as other values the server takes.
	for i, a := range req.Args {
		if err := pd.CheckQueryParam(a); err != nil {
			return pd.QueryResult{}, &pd.Error{Code: pd.ErrInvalidRequest, Message: fmt.Sprintf("parameter %d: %s", i+1, err)}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(req.Named)) {
		if err := pd.CheckQueryParam(req.Named[name]); err != nil {
			return pd.QueryResult{}, &pd.Error{Code: pd.ErrInvalidRequest, Message: fmt.Sprintf("parameter :%s: %s", name, err)}
		}
	}
	body := map[string]any{"sql": req.SQL}
	switch {
	case req.Named != nil:
		body["params"] = req.Named
	case req.Args != nil:
		body["params"] = req.Args
	}
	if req.Limit != 0 {
		body["limit"] = req.Limit
	}
	var out pd.QueryResult
	err := c.do(ctx, request{method: "POST", path: project(slug, "query"), body: body, read: true}, &out)
	plainRows(out.Rows)
	return out, err
}

// ListIndexes returns the table's stored name and its indexes.
func (c *Client) ListIndexes(ctx context.Context, slug, table string) (tableName string, idx []pd.Index, err error) {
	var out struct {
		Table   string     `json:"table"`
		Indexes []pd.Index `json:"indexes"`
	}
	err = c.do(ctx, request{method: "GET", path: project(slug, "indexes", seg(table))}, &out)
	return out.Table, out.Indexes, err
}

// CreateIndex creates an index on the table.
func (c *Client) CreateIndex(ctx context.Context, slug, table string, req pd.IndexRequest) (pd.Index, error) {
	var out struct {
		Index pd.Index `json:"index"`
	}
	err := c.do(ctx, request{method: "POST", path: project(slug, "indexes", seg(table)), body: req, idempotent: true}, &out)
	return out.Index, err
}

// DropIndex drops an index this API created, returning its name.
func (c *Client) DropIndex(ctx context.Context, slug, table, index string) (string, error) {
	var out struct {
		IndexName string `json:"index_name"`
	}
	err := c.do(ctx, request{method: "DELETE", path: project(slug, "indexes", seg(table), seg(index)), idempotent: true}, &out)
	return out.IndexName, err
}

// checkRow refuses, before any request, a value of r that no column
// takes (see pd.CheckValue), with the Store's code; row is r's index in an
// insert's rows, or -1. Of several such values, the message names the
// first column in name order, whatever the map's order.
func checkRow(row int, r pd.Row) error {
	var bad string
	var badErr error
	for k, v := range r {
		if err := pd.CheckValue(v); err != nil && (badErr == nil || k < bad) {
			bad, badErr = k, err
		}
	}
	if badErr == nil {
		return nil
	}
	msg := fmt.Sprintf("column %q: %s", bad, badErr)
	if row >= 0 {
		msg = fmt.Sprintf("row %d: %s", row, msg)
	}
	return &pd.Error{Code: pd.ErrInvalidColumnValue, Message: msg}
}

// nameList joins names with commas, as a query parameter carries a list
// (columns, tables), or refuses a name that such a list cannot carry, ""
// or one holding a comma, with refuse's error: the one the Store gives
// that name (no column or table has it), which the server, reading other
// names or none, would not.
func nameList(names []string, refuse func(name string) error) (string, error) {
	for _, name := range names {
		if name == "" || strings.Contains(name, ",") {
			return "", refuse(name)
		}
	}
	return strings.Join(names, ","), nil
}

// wireWhere is w with each value as wireValue sends it, or, before any
// request, the Store's refusal of a value JSON would carry as another that
// the server takes: a value no column takes (see pd.CheckValue), alone or
// in a list (a []byte as base64 text, a UUID as its text), and a like
// pattern that is not text.
func wireWhere(w pd.Where) (pd.Where, error) {
	if w == nil {
		return nil, nil
	}
	out := make(pd.Where, len(w))
	for i, c := range w {
		if err := checkWhereValue(c); err != nil {
			return nil, errors.WithMessagef(err, "where condition %d", i)
		}
		c.Value = wireValue(c.Value)
		if c.Value == nil && !takesNoValue(c.Op) {
			// A nil value with = or != matches NULL or not; encoded as
			// it is, the condition would leave value out ("needs a value").
			c.Value = json.RawMessage("null")
		}
		out[i] = c
	}
	return out, nil
}

// takesNoValue reports whether op, in any case, is one of the operators
// without a value.
func takesNoValue(op pd.WhereOp) bool {
	return strings.EqualFold(string(op), string(pd.WhereIsNull)) || strings.EqualFold(string(op), string(pd.WhereIsNotNull))
}

// checkWhereValue refuses c's value as the Store does when JSON would not
// carry the refusal to the server (see wireWhere). A nested object or
// array where a scalar goes, and a list that is not one, JSON carries as
// they are: the server refuses them as the Store does.
func checkWhereValue(c pd.Condition) error {
	scalar := func(v any) error {
		switch v.(type) {
		case nil, map[string]any, []any:
			return nil
		}
		if err := pd.CheckValue(v); err != nil {
			return &pd.Error{Code: pd.ErrInvalidColumnValue, Message: fmt.Sprintf("column %q: %s", c.Column, err)}
		}
		return nil
	}
	switch pd.WhereOp(strings.ToLower(string(c.Op))) {
	case pd.WhereIn, pd.WhereNotIn:
		items := reflect.ValueOf(c.Value)
		if _, isBytes := c.Value.([]byte); isBytes || items.Kind() != reflect.Slice {
			return nil
		}
		for i := range items.Len() {
			if err := scalar(items.Index(i).Interface()); err != nil {
				return errors.WithMessagef(err, "value %d", i)
			}
		}
		return nil
	case pd.WhereLike:
		if c.Value != nil && reflect.ValueOf(c.Value).Kind() != reflect.String {
			return &pd.Error{Code: pd.ErrInvalidWhere, Message: fmt.Sprintf("op %s takes a text pattern", c.Op)}
		}
		return nil
	}
	return scalar(c.Value)
}

// wireValue is v as JSON must carry it for the server to read the value
// the Store reads from v itself, as Row's MarshalJSON writes a row's
// values: a time.Time in UTC (encoding/json keeps its zone, and a TEXT
// column compares the text), a float32 as the float64 it is
// (1.100000023841858, not 1.1), and so each item of a list (in, not_in).
func wireValue(v any) any {
	switch x := v.(type) {
	case nil, []byte:
		return v
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Float32:
		return rv.Float()
	case reflect.Slice:
		items := make([]any, rv.Len())
		for i := range items {
			items[i] = wireValue(rv.Index(i).Interface())
		}
		return items
	}
	return v
}

// plainRows turns the exact numbers of decoded rows into the Store's Go
// types (see plain).
func plainRows(rows []pd.Row) {
	for _, r := range rows {
		for k, v := range r {
			r[k] = plain(v)
		}
	}
}

// plain turns a decoded JSON number into the Store's Go type: int64 for an
// integer written as one (2), float64 for a number written with a
// fraction or an exponent (2.0, 2e0: a REAL value, which the Store returns
// as float64 even when integral; Int64 parses only the digits of an
// integer) or too large for an int64.
func plain(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}
