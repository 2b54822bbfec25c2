package projectdata

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"

	"github.com/projectdata/projectdata/sqlguard"
)

// Query limits of the specification.
const (
	DefaultQueryLimit = 500
	MaxQueryLimit     = 1000
)

// QueryRequest is one read-only SQL statement with its parameters.
type QueryRequest struct {
	// SQL is one SELECT, WITH … SELECT or EXPLAIN QUERY PLAN statement.
	SQL string
	// Args are positional parameters (?, ?NNN).
	Args []any
	// Named are named parameters, keyed without their prefix: the statement
	// refers to them as :name (or @name, $name).
	Named map[string]any
	// Limit caps the rows returned. Zero: 500; clamped to 1..1000.
	Limit int
}

// UnmarshalJSON decodes the query body: sql or query (one of them), params
// as an array (positional) or an object (named), and limit (an explicit
// value below 1 is clamped to 1).
func (q *QueryRequest) UnmarshalJSON(b []byte) error {
	var body struct {
		SQL    *string         `json:"sql"`
		Query  *string         `json:"query"`
		Params json.RawMessage `json:"params"`
		Limit  *json.Number    `json:"limit"`
	}
	if err := decodeJSONStrict(b, &body); err != nil {
		return err
	}
	switch {
	case body.SQL != nil && body.Query != nil && *body.SQL != *body.Query:
		return errorf(ErrInvalidRequest, "send the statement as sql or as query, not both")
	case body.SQL != nil:
		q.SQL = *body.SQL
	case body.Query != nil:
		q.SQL = *body.Query
	}
	if p := strings.TrimSpace(string(body.Params)); p != "" && p != "null" {
		var err error
		if p[0] == '[' {
			err = decodeJSON(body.Params, &q.Args)
		} else {
			err = decodeJSON(body.Params, &q.Named)
		}
		if err != nil {
			return errorf(ErrInvalidRequest, "params must be an array (positional) or an object (named)")
		}
	}
	if body.Limit != nil {
		n, err := body.Limit.Int64()
		if err != nil {
			return errorf(ErrInvalidRequest, "limit must be an integer")
		}
		q.Limit = int(max(1, min(n, MaxQueryLimit)))
	}
	return nil
}

// QueryResult is the answer to a query.
type QueryResult struct {
	Rows       []Row   `json:"rows"`
	RowCount   int     `json:"row_count"`
	Limit      int     `json:"limit"`
	DurationMS float64 `json:"duration_ms"`
	// Columns are the result's column names, in order; a name that repeats
	// gets a suffix (id, id_2), as its key in Rows does.
	Columns []string `json:"columns"`
	// Truncated is true when more rows existed than Limit.
	Truncated bool `json:"truncated"`
}

// Query runs one read-only statement against the project's application
// tables. It is sandboxed in depth: the sqlguard lexer admits only one
// SELECT, WITH … SELECT or EXPLAIN QUERY PLAN statement; SQLite's
// authorizer allows reads of registered application tables only; the
// statement must be read-only by SQLite's own verdict and alone; and it runs
// on a read-only connection. It is bounded by Options.QueryTimeout and
// Options.QueryMaxBytes.
//
// Errors: ErrWriteSQLForbidden, ErrQueryTableDenied, ErrQueryBudgetExceeded
// (the message names the full scans of the plan), ErrQueryResultTooLarge,
// ErrInvalidRequest (no statement, bad SQL, parameters that do not match),
// ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) Query(ctx context.Context, slug string, req QueryRequest) (QueryResult, error) {
	var res QueryResult
	err := s.withProject(ctx, slug, OpQuery, func(p *project) error {
		if strings.TrimSpace(req.SQL) == "" {
			return errorf(ErrInvalidRequest, "sql is required")
		}
		if err := sqlguard.Check(req.SQL); err != nil {
			return errorf(ErrWriteSQLForbidden, "only one read-only SELECT, WITH or EXPLAIN QUERY PLAN statement is allowed: %s", err)
		}
		limit := req.Limit
		if limit == 0 {
			limit = DefaultQueryLimit
		}
		limit = max(1, min(limit, MaxQueryLimit))
		start := time.Now()
		err := p.readSchema(ctx, func(c *conn, sc *schema) error {
			var err error
			res, err = s.runQuery(ctx, c, sc, req, limit)
			return err
		})
		res.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		return err
	})
	return res, err
}

// sandbox is the authorizer of one query: it allows reads of registered
// application tables and nothing that writes, and remembers what it denied.
type sandbox struct {
	sc          *schema
	deniedTable string
	deniedOther bool
}

// eponymousTables are the table-valued functions a query may read: they
// compute rows from their arguments and touch no table.
// A table of the same name would shadow them, so no table may take one of
// these names (see checkTableDef).
var eponymousTables = map[string]bool{
	"json_each": true, "json_tree": true, "jsonb_each": true, "jsonb_tree": true, "generate_series": true,
}

// isPragmaFunction reports whether a name is one of SQLite's pragma_*
// table-valued functions, which read the database's structure.
func isPragmaFunction(name string) bool {
	return strings.HasPrefix(strings.ToLower(name), "pragma_")
}

func (sb *sandbox) authorize(action sqlite3.AuthorizerActionCode, name3rd, _, schema, _ string) sqlite3.AuthorizerReturnCode {
	switch action {
	case sqlite3.AUTH_SELECT, sqlite3.AUTH_FUNCTION, sqlite3.AUTH_RECURSIVE:
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_READ:
		if sb.readable(name3rd, schema) {
			return sqlite3.AUTH_OK
		}
		if sb.deniedTable == "" {
			sb.deniedTable = name3rd
			if schema != "" && schema != "main" {
				sb.deniedTable = schema + "." + name3rd
			}
		}
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_PRAGMA:
		if sb.deniedTable == "" {
			sb.deniedTable = "pragma_" + strings.ToLower(name3rd)
		}
		return sqlite3.AUTH_DENY
	}
	sb.deniedOther = true
	return sqlite3.AUTH_DENY
}

// readable decides one read. SQLite names the schema of a column read; a
// read of a whole table (count(*)) or of a common table expression comes
// with no schema and no column, so a name without one passes only when it
// is a registered table, an allowed table-valued function, or no table at
// all (a CTE): never a pragma function, whose check SQLite would otherwise
// make only while stepping.
func (sb *sandbox) readable(table, schema string) bool {
	name := strings.ToLower(table)
	switch {
	case schema != "main" && schema != "":
		return false
	case sb.sc.byName[name] != nil, eponymousTables[name]:
		return true
	case schema == "":
		return !isReserved(name) && !isPragmaFunction(name) && !sb.sc.objects[name]
	}
	return false
}

// err explains a statement the sandbox refused.
func (sb *sandbox) err() error {
	if sb.deniedTable != "" {
		return errorf(ErrQueryTableDenied, "the query reads %.80q, which is not an application table of this project", sb.deniedTable)
	}
	return errorf(ErrWriteSQLForbidden, "the statement does something other than read application tables")
}

// runQuery prepares, checks, binds and steps the statement on the reader c.
func (s *Store) runQuery(ctx context.Context, c *conn, sc *schema, req QueryRequest, limit int) (res QueryResult, err error) {
	defer recoverOOM(&err)
	sb := &sandbox{sc: sc}
	c.sandbox = sb
	defer func() { c.sandbox = nil }()
	maxBytes := s.opts.QueryMaxBytes
	oldLength := c.db.Limit(sqlite3.LIMIT_LENGTH, maxBytes)
	defer c.db.Limit(sqlite3.LIMIT_LENGTH, oldLength)
	oldHeap := c.db.HardHeapLimit(s.opts.QueryMaxMemory)
	defer c.db.HardHeapLimit(oldHeap)

	st, tail, err := c.db.PrepareFlags(req.SQL, sqlite3.PREPARE_DONT_LOG)
	if err != nil {
		return res, sb.prepareError(err)
	}
	if st == nil {
		return res, errorf(ErrInvalidRequest, "sql holds no statement")
	}
	defer st.Close()
	if strings.TrimSpace(tail) != "" {
		if next, _, err := c.db.Prepare(tail); err != nil || next != nil {
			if next != nil {
				next.Close()
			}
			return res, errorf(ErrWriteSQLForbidden, "only one statement is allowed")
		}
	}
	if !st.ReadOnly() {
		return res, errorf(ErrWriteSQLForbidden, "the statement is not read-only")
	}
	if err := bindQueryParams(st, req); err != nil {
		return res, err
	}

	budget, cancel := context.WithTimeout(ctx, s.opts.QueryTimeout)
	defer cancel()
	old := c.db.SetInterrupt(budget)
	defer c.db.SetInterrupt(old)

	res.Limit = limit
	res.Columns = resultColumns(st)
	res.Rows = []Row{}
	size := 0
	for st.Step() {
		if len(res.Rows) == limit {
			res.Truncated = true
			break
		}
		row := make(Row, len(res.Columns))
		for i, name := range res.Columns {
			v := columnValue(st, i)
			size += encodedSize(name, v)
			row[name] = v
		}
		if size > maxBytes {
			return res, errorf(ErrQueryResultTooLarge, "the result exceeds %d bytes; select fewer columns or rows", maxBytes)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := st.Err(); err != nil {
		c.db.SetInterrupt(old)
		return res, s.stepError(ctx, c, sb, req, budget, err)
	}
	res.RowCount = len(res.Rows)
	return res, nil
}

// prepareError explains a statement that did not prepare.
func (sb *sandbox) prepareError(err error) error {
	switch {
	case errors.Is(err, sqlite3.AUTH):
		return sb.err()
	case errors.Is(err, sqlite3.TOOBIG):
		return errorf(ErrQueryResultTooLarge, "the statement is too large")
	}
	return errorf(ErrInvalidRequest, "invalid SQL: %s", sqliteMessage(err))
}

// stepError explains a failure while stepping: the execution budget ran
// out (with the plan's full scans as the hint), a value outgrew the result
// budget, or the SQL failed.
func (s *Store) stepError(ctx context.Context, c *conn, sb *sandbox, req QueryRequest, budget context.Context, err error) error {
	switch {
	case errors.Is(err, sqlite3.INTERRUPT) && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, sqlite3.INTERRUPT) && budget.Err() != nil:
		msg := "the query ran past its execution budget of " + s.opts.QueryTimeout.String()
		if scans := fullScans(c, sb.sc, req); len(scans) > 0 {
			msg += "; the plan scans " + strings.Join(scans, ", ") + " in full: add an index or narrow the query"
		} else {
			msg += "; narrow the query"
		}
		return errorf(ErrQueryBudgetExceeded, "%s", msg)
	case errors.Is(err, sqlite3.TOOBIG):
		return errorf(ErrQueryResultTooLarge, "a value of the result exceeds %d bytes", s.opts.QueryMaxBytes)
	case errors.Is(err, sqlite3.NOMEM):
		return errorf(ErrQueryBudgetExceeded, "the query needs more memory than its budget; narrow the query")
	case errors.Is(err, sqlite3.AUTH):
		return sb.err()
	}
	return errorf(ErrInvalidRequest, "the query failed: %s", sqliteMessage(err))
}

// fullScans returns the application tables that the statement reads in
// full. It reads the statement's bytecode (EXPLAIN, prepared through the
// same sandbox, never run): a cursor opened on a table or one of its
// indexes and looped from its first row (Rewind) is a full scan. The plan's
// own text names aliases, not tables, so it is not used.
func fullScans(c *conn, sc *schema, req QueryRequest) []string {
	// The caller's statement has failed and is not stepped again, so its
	// sandbox can go while we read the schema ourselves.
	c.sandbox = nil
	roots := map[int64]string{} // root page → table
	err := c.query(`SELECT rootpage, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0`, nil, func(st *sqlite3.Stmt) error {
		roots[st.ColumnInt64(0)] = st.ColumnText(1)
		return nil
	})
	if err != nil || strings.HasPrefix(strings.ToUpper(strings.TrimSpace(req.SQL)), "EXPLAIN") {
		return nil
	}
	c.sandbox = &sandbox{sc: sc}
	st, _, err := c.db.Prepare("EXPLAIN " + req.SQL)
	c.sandbox = nil
	if err != nil || st == nil {
		return nil
	}
	defer st.Close()
	cursors := map[int64]string{}
	var scans []string
	seen := map[string]bool{}
	for st.Step() { // columns: addr, opcode, p1, p2, …
		switch st.ColumnText(1) {
		case "OpenRead":
			cursors[st.ColumnInt64(2)] = roots[st.ColumnInt64(3)]
		case "Rewind":
			if t := sc.byName[strings.ToLower(cursors[st.ColumnInt64(2)])]; t != nil && !seen[t.Name] {
				seen[t.Name] = true
				scans = append(scans, t.Name)
			}
		}
	}
	return scans
}

// bindQueryParams binds positional or named parameters; the statement's
// parameters and the ones given must match.
func bindQueryParams(st *sqlite3.Stmt, req QueryRequest) error {
	n := st.BindCount()
	if len(req.Args) > 0 && len(req.Named) > 0 {
		return errorf(ErrInvalidRequest, "params are either positional or named, not both")
	}
	if req.Named == nil {
		if len(req.Args) != n {
			return errorf(ErrInvalidRequest, "the statement has %d parameters but %d were given", n, len(req.Args))
		}
		for i, a := range req.Args {
			v, err := paramValue(a)
			if err != nil {
				return errorf(ErrInvalidRequest, "parameter %d: %s", i+1, err)
			}
			if err := bind(st, i+1, v); err != nil {
				return err
			}
		}
		return nil
	}
	used := 0
	for i := 1; i <= n; i++ {
		name := st.BindName(i)
		if name == "" || name[0] == '?' {
			return errorf(ErrInvalidRequest, "the statement has positional parameters; send params as an array")
		}
		a, ok := req.Named[name[1:]]
		if !ok {
			return errorf(ErrInvalidRequest, "parameter %s has no value in params", name)
		}
		used++
		v, err := paramValue(a)
		if err != nil {
			return errorf(ErrInvalidRequest, "parameter %s: %s", name, err)
		}
		if err := bind(st, i, v); err != nil {
			return err
		}
	}
	if used != len(req.Named) {
		return errorf(ErrInvalidRequest, "params name %d values but the statement uses %d", len(req.Named), used)
	}
	return nil
}

// paramValue turns a JSON-decoded or Go scalar into a value to bind.
func paramValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, int64, float64, bool:
		return x, nil
	case int:
		return int64(x), nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, errors.New("the number is out of range")
		}
		return f, nil
	}
	return nil, errors.New("a parameter must be a string, number, boolean or null")
}

// resultColumns returns the statement's column names, a repeated name
// suffixed so that every row key is unique.
func resultColumns(st *sqlite3.Stmt) []string {
	n := st.ColumnCount()
	cols := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range n {
		name := st.ColumnName(i)
		for k := 2; seen[name]; k++ {
			name = st.ColumnName(i) + "_" + strconv.Itoa(k)
		}
		seen[name] = true
		cols[i] = name
	}
	return cols
}

// columnValue reads one result value as int64, float64, string, []byte or
// nil.
func columnValue(st *sqlite3.Stmt, i int) any {
	switch st.ColumnType(i) {
	case sqlite3.INTEGER:
		return st.ColumnInt64(i)
	case sqlite3.FLOAT:
		return st.ColumnFloat(i)
	case sqlite3.TEXT:
		return st.ColumnText(i)
	case sqlite3.BLOB:
		return st.ColumnBlob(i, nil)
	}
	return nil
}

// encodedSize estimates the bytes of a value and its key in a JSON row.
func encodedSize(key string, v any) int {
	n := len(key) + 4
	switch x := v.(type) {
	case string:
		n += len(x) + 2
	case []byte:
		n += (len(x)+2)/3*4 + 2
	default:
		n += 20
	}
	return n
}

// sqliteMessage returns SQLite's explanation of a failure in its own words
// ("no such table: nope"), without the driver's prefix naming the result
// code: it speaks of the user's own SQL, never of internals.
func sqliteMessage(err error) string {
	msg := err.Error()
	var e *sqlite3.Error
	if errors.As(err, &e) {
		msg = strings.TrimPrefix(e.Error(), e.ExtendedCode().Error()+": ")
	}
	return truncateTo(strings.TrimPrefix(msg, "sqlite3: "), 200)
}

// recoverOOM turns the driver's out-of-memory panic into a budget error;
// any other panic goes on.
func recoverOOM(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(error); ok && strings.Contains(e.Error(), "out of memory") {
		*err = errorf(ErrQueryBudgetExceeded, "the query needs more memory than its budget; narrow the query")
		return
	}
	panic(r)
}

// decodeJSONStrict decodes one JSON object refusing unknown fields.
func decodeJSONStrict(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return errorf(ErrInvalidRequest, "the query body must be an object with sql or query, params and limit")
	}
	return nil
}
