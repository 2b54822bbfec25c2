package projectdata

import (
	"context"
	"encoding/json"
	"math"
	"slices"
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
// value below 1 is clamped to 1). It is what DecodeJSON does with a
// QueryRequest.
func (q *QueryRequest) UnmarshalJSON(b []byte) error {
	js := newJSONBytes(b)
	if err := q.decodeJSONStream(js); err != nil {
		return err
	}
	return js.end()
}

// The refusals of a query body that name no part of it: one value each,
// not made for every body decoded.
var (
	errQueryBodyShape = errorf(ErrInvalidRequest, "the query body must be an object with sql or query, params and limit")
	errTooManyParams  = errorf(ErrInvalidRequest, "a statement takes at most %d params", maxQueryParams)
)

// decodeJSONStream reads the query body in one pass. Params are read one
// by one: a container where a scalar belongs, or more params than SQLite
// takes, is refused before the rest is read.
func (q *QueryRequest) decodeJSONStream(js *jsonStream) error {
	var sql, query *string
	var seen fieldSet
	err := js.object(errQueryBodyShape, func(key string) error {
		if !seen.add(key) {
			return errKeyTwice(key)
		}
		switch key {
		case "sql", "query":
			v, err := js.scalar()
			if err != nil && err != errNotScalar {
				return err
			}
			s, ok := v.(string)
			if v == nil && err == nil {
				return nil
			}
			if !ok {
				return errorf(ErrInvalidRequest, "%s must be a string", key)
			}
			if key == "sql" {
				sql = &s
			} else {
				query = &s
			}
		case "params":
			return q.decodeParams(js)
		case "limit":
			v, err := js.scalar()
			if err != nil && err != errNotScalar {
				return err
			}
			if v == nil && err == nil {
				return nil
			}
			// An integer in any notation (1e3), clamped however large.
			n, ok := v.(json.Number)
			f, nerr := strconv.ParseFloat(string(n), 64) // ±Inf when out of range
			if !ok || (nerr != nil && !math.IsInf(f, 0)) || f != math.Trunc(f) {
				return errorf(ErrInvalidRequest, "limit must be an integer")
			}
			q.Limit = int(max(1, min(f, MaxQueryLimit)))
		default:
			return errorf(ErrInvalidRequest, "unknown field %.40q (fields: sql or query, params, limit)", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case sql != nil && query != nil && *sql != *query:
		return errorf(ErrInvalidRequest, "send the statement as sql or as query, not both")
	case sql != nil:
		q.SQL = *sql
	case query != nil:
		q.SQL = *query
	}
	return nil
}

// decodeParams reads params: null, an array (positional) or an object
// (named) of at most maxQueryParams scalars.
func (q *QueryRequest) decodeParams(js *jsonStream) error {
	tok, err := js.token()
	if err != nil {
		return err
	}
	scalar := func(name string) (any, error) {
		v, err := js.scalar()
		if err == errNotScalar {
			return nil, errorf(ErrInvalidRequest, "parameter %s: a parameter must be a string, number, boolean or null", name)
		}
		return v, err
	}
	switch tok {
	case nil:
		return nil
	case json.Delim('['):
		q.Args = []any{}
		return js.array(func(i int) error {
			if i >= maxQueryParams {
				return errTooManyParams
			}
			v, err := scalar(strconv.Itoa(i + 1))
			q.Args = append(q.Args, v)
			return err
		})
	case json.Delim('{'):
		q.Named = map[string]any{}
		return js.fields(func(key string) error {
			v, err := scalar(":" + key)
			q.Named[key] = v
			if len(q.Named) > maxQueryParams {
				return errTooManyParams
			}
			return err
		})
	}
	return errorf(ErrInvalidRequest, "params must be an array (positional) or an object (named)")
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
// on a read-only connection. It is bounded by Options.QueryTimeout,
// Options.QueryMaxBytes, Options.QueryMaxMemory and
// Options.QueryMaxCallArgs.
//
// Errors: ErrWriteSQLForbidden, ErrQueryTableDenied, ErrQueryBudgetExceeded
// (the message names the full scans of the plan), ErrQueryResultTooLarge,
// ErrInvalidRequest (no statement, bad SQL, parameters that do not match,
// more than 64 SELECTs or an expression more than 128 deep: SQLite's own
// stack holds no more; a call of decimal_mul, decimal_pow2, regexp
// (REGEXP), regexpi, json_patch or jsonb_patch, which the budget cannot
// stop; more arguments to functions than Options.QueryMaxCallArgs),
// ErrServerBusy (a query that needs more than a reader's usual
// memory when reserving Options.QueryMaxMemory would pass
// Options.MaxSQLiteMemory), ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) Query(ctx context.Context, slug string, req QueryRequest) (QueryResult, error) {
	return s.query(ctx, slug, req, nil)
}

// AppendQueryJSON appends the result Query returns to dst as JSON: the
// same bytes as json.Marshal of that QueryResult, with its rows encoded
// straight from SQLite's columns, building no Row. On error dst is
// returned as it was.
//
// Errors: as Query.
func (s *Store) AppendQueryJSON(ctx context.Context, dst []byte, slug string, req QueryRequest) ([]byte, error) {
	enc := &jsonRows{start: len(dst), buf: dst}
	res, err := s.query(ctx, slug, req, enc)
	if err != nil {
		return dst, err
	}
	out := append(enc.buf, `],"row_count":`...)
	out = strconv.AppendInt(out, int64(res.RowCount), 10)
	out = append(out, `,"limit":`...)
	out = strconv.AppendInt(out, int64(res.Limit), 10)
	out = append(out, `,"duration_ms":`...)
	out, _ = appendJSONFloat(out, res.DurationMS) // finite
	out = append(out, `,"columns":`...)
	if res.Columns == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		for i, name := range res.Columns {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendHTMLSafeString(out, name)
		}
		out = append(out, ']')
	}
	out = append(out, `,"truncated":`...)
	out = strconv.AppendBool(out, res.Truncated)
	return append(out, '}'), nil
}

// query is Query, with the rows encoded into enc when it is not nil (the
// result's Rows then stay empty).
func (s *Store) query(ctx context.Context, slug string, req QueryRequest, enc *jsonRows) (QueryResult, error) {
	var res QueryResult
	err := s.withProject(ctx, slug, OpQuery, func(p *project) error {
		if strings.TrimSpace(req.SQL) == "" {
			return errorf(ErrInvalidRequest, "sql is required")
		}
		shape, err := sqlguard.Admit(req.SQL)
		var refused *sqlguard.RefusedError
		if errors.As(err, &refused) { // its reason and place, without the gate's name
			return errorf(ErrWriteSQLForbidden, "only one read-only SELECT, WITH or EXPLAIN QUERY PLAN statement is allowed: %s (at byte %d)", refused.Reason, refused.Offset)
		}
		if err != nil {
			return errorf(ErrWriteSQLForbidden, "only one read-only SELECT, WITH or EXPLAIN QUERY PLAN statement is allowed")
		}
		if shape.Selects > maxQuerySelects {
			return errorf(ErrInvalidRequest, "the statement holds %d SELECTs; at most %d fit SQLite's stack: simplify it", shape.Selects, maxQuerySelects)
		}
		if shape.CallArgs > s.opts.QueryMaxCallArgs {
			return errorf(ErrInvalidRequest, "the statement passes %d arguments to functions (a call without any, and each -> or ->>, counting one); at most %d run within the query budget: simplify it, or split it", shape.CallArgs, s.opts.QueryMaxCallArgs)
		}
		limit := req.Limit
		if limit == 0 {
			limit = DefaultQueryLimit
		}
		limit = max(1, min(limit, MaxQueryLimit))
		// The duration is the query's, from when it has its connection:
		// not the wait for one (as its budget is not).
		var start time.Time
		err = p.readSchema(ctx, func(c *conn, sc *schema) error {
			if start.IsZero() {
				start = time.Now()
			}
			var err error
			res, err = s.runQuery(ctx, c, sc, req, limit, enc)
			return err
		})
		if !start.IsZero() {
			res.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		}
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
	// deniedFunction is a function no query may call (see slowFunctions).
	deniedFunction string
	// budget, when set, ends preparation too: SQLite asks the authorizer
	// all along planning, and a denial stops it.
	budget  context.Context
	expired bool
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

func (sb *sandbox) authorize(action sqlite3.AuthorizerActionCode, name3rd, name4th, schema, _ string) sqlite3.AuthorizerReturnCode {
	if sb.budget != nil && sb.budget.Err() != nil {
		sb.expired = true
		return sqlite3.AUTH_DENY
	}
	switch action {
	case sqlite3.AUTH_FUNCTION:
		if slowFunctions[strings.ToLower(name4th)] {
			if sb.deniedFunction == "" {
				sb.deniedFunction = strings.ToLower(name4th)
			}
			return sqlite3.AUTH_DENY
		}
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_SELECT, sqlite3.AUTH_RECURSIVE:
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
		// A registry without its objects (a schema change's, before its
		// first read fills them in) would let every unregistered table
		// pass as a CTE: refuse instead.
		return sb.sc.objects != nil && !isReserved(name) && !isPragmaFunction(name) && !sb.sc.objects[name]
	}
	return false
}

// err explains a statement the sandbox refused.
func (sb *sandbox) err() error {
	if sb.deniedTable != "" {
		return errorf(ErrQueryTableDenied, "the query reads %.80q, which is not an application table of this project", sb.deniedTable)
	}
	if sb.deniedFunction != "" {
		return errorf(ErrInvalidRequest, "queries may not call %s: one call of it can outlast any execution budget", sb.deniedFunction)
	}
	return errorf(ErrWriteSQLForbidden, "the statement does something other than read application tables")
}

// runQuery runs the statement on the reader c under the execution budget
// (Options.QueryTimeout, from preparation on, ended early when ctx ends)
// and the memory budget (see withinQueryHeap).
func (s *Store) runQuery(ctx context.Context, c *conn, sc *schema, req QueryRequest, limit int, enc *jsonRows) (res QueryResult, err error) {
	budget, cancel := withBudget(ctx, s.opts.QueryTimeout)
	defer cancel()
	q := &queryRun{s: s, ctx: ctx, budget: budget, c: c, sc: sc, req: req, limit: limit, enc: enc}
	err = s.withinQueryHeap(c, func(heap int64) (err error) {
		res, err = q.run(heap)
		return err
	})
	if errors.Is(err, errQueryHeap) {
		err = errorf(ErrQueryBudgetExceeded, "the query needs more memory than its budget of %d MiB; narrow the query", s.opts.QueryMaxMemory>>20)
	}
	return res, err
}

// withinQueryHeap runs run, which caps SQLite's heap on the reader c at
// the heap it is given and returns errQueryHeap when that ran out: first
// within the usual heap of a reader, then once more within
// Options.QueryMaxMemory, reserved from Options.MaxSQLiteMemory; the reader
// is then closed, not pooled, so that the memory goes back. It returns
// errQueryHeap when the second run ran out too. Readers hold their sorts and
// temporary tables in that heap, never on disk (see conn.configure).
func (s *Store) withinQueryHeap(c *conn, run func(heap int64) error) error {
	usual := min(usualQueryHeap, s.opts.QueryMaxMemory)
	err := run(usual)
	if !errors.Is(err, errQueryHeap) || usual == s.opts.QueryMaxMemory {
		return err
	}
	if !s.heap.reserve(c, s.opts.QueryMaxMemory) {
		return errorf(ErrServerBusy, "the server's SQLite memory (%d MiB) is in use by other queries; retry", s.opts.MaxSQLiteMemory>>20)
	}
	return run(s.opts.QueryMaxMemory)
}

// SQLite resolves nested queries and expressions recursively, on a stack of
// its own, which a statement nested a few hundred levels deep overflows
// (a chain of 264 common table expressions, 500 nested function calls, a
// compound of 250 SELECTs): the reader is then left unusable and its memory
// can never be given back (see recoverDriverPanic). Statements are held well
// under that: at most maxQuerySelects SELECTs (so no deeper nesting of
// queries) and expressions at most maxQueryExprDepth deep, together at most
// about half the stack. These bounds protect the process, so they are not
// options.
const (
	maxQuerySelects   = 64
	maxQueryExprDepth = 128
)

// usualQueryHeap is the heap a reader may grow to and still be pooled.
const usualQueryHeap = 8 << 20

// errQueryHeap is a statement that ran out of the heap it was given.
var errQueryHeap = errors.New("the query needs more heap")

// queryRun is one query on a reader, under its budget.
type queryRun struct {
	s      *Store
	ctx    context.Context // the caller's
	budget context.Context // ctx with the execution budget
	c      *conn
	sc     *schema
	req    QueryRequest
	limit  int

	enc      *jsonRows     // where the rows are encoded, instead of res.Rows; nil: built
	prepared time.Duration // how long preparation took
	// hintBudget bounds the EXPLAIN work of the budget error's hint. Zero: a
	// tenth of Options.QueryTimeout, for SQL from the caller.
	hintBudget time.Duration
}

// run prepares, checks, binds and steps the statement once, with SQLite's
// heap capped at heap.
func (q *queryRun) run(heap int64) (res QueryResult, err error) {
	c := q.c
	defer recoverDriverPanic(c, &err)
	sb := &sandbox{sc: q.sc, budget: q.budget}
	c.sandbox = sb
	defer func() { c.sandbox = nil }()
	maxBytes := q.s.opts.QueryMaxBytes
	oldLength := c.db.Limit(sqlite3.LIMIT_LENGTH, maxBytes)
	defer c.db.Limit(sqlite3.LIMIT_LENGTH, oldLength)
	oldSQL := c.db.Limit(sqlite3.LIMIT_SQL_LENGTH, q.s.opts.QueryMaxSQLBytes)
	defer c.db.Limit(sqlite3.LIMIT_SQL_LENGTH, oldSQL)
	oldDepth := c.db.Limit(sqlite3.LIMIT_EXPR_DEPTH, maxQueryExprDepth)
	defer c.db.Limit(sqlite3.LIMIT_EXPR_DEPTH, oldDepth)
	oldHeap := c.db.HardHeapLimit(heap)
	defer c.db.HardHeapLimit(oldHeap)
	old := c.db.SetInterrupt(q.budget)
	defer c.db.SetInterrupt(old)

	if len(q.req.SQL) > q.s.opts.QueryMaxSQLBytes {
		return res, errorf(ErrInvalidRequest, "the statement is longer than %d bytes", q.s.opts.QueryMaxSQLBytes)
	}
	// ranToEnd: the statement ran to its end, so it may be kept. Not on an
	// error, nor while a panic of the driver unwinds (out of memory: see
	// recoverDriverPanic), when only finalizing the statement is safe; a
	// statement not finalized keeps its connection, and the connection's
	// memory, from ever closing.
	ranToEnd := false
	kept, cached := c.cachedQuery(q.req.SQL, q.sc)
	var st *sqlite3.Stmt
	if cached {
		st = kept.st
		st.ClearBindings()
		// Kept only when it ran to the end: anything else (an error, the
		// heap) prepares it afresh next time.
		defer func() {
			if ranToEnd {
				err = st.Reset()
			}
			if !ranToEnd || err != nil {
				c.forgetQuery(q.req.SQL)
			}
		}()
	} else {
		start := time.Now()
		var tail string
		st, tail, err = c.db.PrepareFlags(q.req.SQL, sqlite3.PREPARE_DONT_LOG|sqlite3.PREPARE_PERSISTENT)
		q.prepared = time.Since(start)
		if err != nil {
			return res, q.prepareError(sb, err)
		}
		if st == nil {
			return res, errorf(ErrInvalidRequest, "sql holds no statement")
		}
		defer func() {
			if ranToEnd && st.Reset() == nil && st.Status(sqlite3.STMTSTATUS_MEMUSED, false) <= maxKeptQueryBytes {
				c.keepQuery(q.req.SQL, q.sc, st, res.Columns)
			} else {
				st.Close()
			}
		}()
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
	}
	if err := bindQueryParams(st, q.req); err != nil {
		return res, err
	}

	res.Limit = q.limit
	var keys *rowKeys
	if cached {
		// The kept statement's columns and keys, made once; the caller of
		// Query gets a copy it may change.
		res.Columns, keys = kept.columns, &kept.keys
		if q.enc == nil {
			res.Columns = slices.Clone(res.Columns)
		}
	} else {
		res.Columns = resultColumns(st)
		if q.enc != nil {
			k := newRowKeys(res.Columns)
			keys = &k
		}
	}
	res.Rows = []Row{}
	if q.enc != nil {
		q.enc.buf = append(q.enc.buf[:q.enc.start], `{"rows":[`...) // afresh: run may run again
		q.enc.rows = 0
	}
	budget := newRowsBudget(maxBytes)
	// SQLite prepares the statement again inside a step when the schema
	// changed since it was prepared (behind the registry's back, by
	// another program, as a kept statement's registry is the same): the
	// columns read before may be stale, so they are read again then.
	reprepares := st.Status(sqlite3.STMTSTATUS_REPREPARE, false)
	follow := func() {
		if reprepares < 0 || st.Status(sqlite3.STMTSTATUS_REPREPARE, false) == reprepares {
			reprepares = -1
			return
		}
		reprepares = -1
		res.Columns = resultColumns(st)
		k := newRowKeys(res.Columns)
		keys = &k
		if cached {
			kept.columns, kept.keys = slices.Clone(res.Columns), k
		}
	}
	for st.Step() {
		follow()
		if res.RowCount == q.limit {
			res.Truncated = true
			break
		}
		var rowSize int // the row's JSON object
		if q.enc != nil {
			rowSize, _ = q.enc.appendRow(keys, st, res.Columns, budget.room()) // past the room: the error below
		} else {
			row := make(Row, len(res.Columns))
			sum := 0
			for i, name := range res.Columns {
				v := columnValue(st, i)
				sum += rowValueSize(name, v)
				row[name] = v
			}
			rowSize = rowJSONSize(sum, len(res.Columns))
			res.Rows = append(res.Rows, row)
		}
		if !budget.add(rowSize) {
			return res, errorf(ErrQueryResultTooLarge, "the result exceeds %d bytes of JSON; select fewer columns or rows", maxBytes)
		}
		res.RowCount++
	}
	if err := st.Err(); err != nil {
		c.db.SetInterrupt(old)
		return res, q.stepError(sb, err)
	}
	follow()
	ranToEnd = true
	return res, nil
}

// prepareError explains a statement that did not prepare.
func (q *queryRun) prepareError(sb *sandbox, err error) error {
	// The budget ends planning through the authorizer (sb.expired), and
	// parsing through the interrupt.
	interrupted := sb.expired || errors.Is(err, sqlite3.INTERRUPT) && q.budget.Err() != nil
	switch {
	case interrupted && q.ctx.Err() != nil:
		return q.ctx.Err()
	case interrupted:
		return q.budgetError()
	case errors.Is(err, sqlite3.AUTH), sb.deniedFunction != "": // a function denied fails as SQLITE_ERROR
		return sb.err()
	case errors.Is(err, sqlite3.TOOBIG):
		return errorf(ErrInvalidRequest, "the statement is larger than SQLite allows")
	case errors.Is(err, sqlite3.NOMEM):
		return errQueryHeap
	}
	return errorf(ErrInvalidRequest, "invalid SQL: %s", sqliteMessage(err))
}

// stepError explains a failure while stepping: the execution budget ran
// out (with the plan's full scans as the hint), a value outgrew the result
// budget, or the SQL failed.
func (q *queryRun) stepError(sb *sandbox, err error) error {
	switch {
	case errors.Is(err, sqlite3.INTERRUPT) && q.ctx.Err() != nil:
		return q.ctx.Err()
	case errors.Is(err, sqlite3.INTERRUPT) && q.budget.Err() != nil:
		return q.budgetError()
	case errors.Is(err, sqlite3.TOOBIG):
		return errorf(ErrQueryResultTooLarge, "a value the query makes, in its result or on the way to it, exceeds %d bytes", q.s.opts.QueryMaxBytes)
	case errors.Is(err, sqlite3.NOMEM):
		return errQueryHeap
	case errors.Is(err, sqlite3.AUTH):
		return sb.err()
	}
	return errorf(ErrInvalidRequest, "the query failed: %s", sqliteMessage(err))
}

// budgetError is query_budget_exceeded, with the plan's full scans as the
// hint. The hint has its own small budget (a tenth of the query's, tied to
// the caller's context) and is left out when the statement took longer
// than that to prepare, so the whole query stays within 1.1 times
// Options.QueryTimeout.
func (q *queryRun) budgetError() error {
	msg := "the query ran past its execution budget of " + q.s.opts.QueryTimeout.String()
	hintBudget := q.hintBudget
	if hintBudget == 0 {
		hintBudget = q.s.opts.QueryTimeout / 10
	}
	var scans []string
	if q.prepared < hintBudget/2 {
		hctx, cancel := context.WithTimeout(q.ctx, hintBudget)
		old := q.c.db.SetInterrupt(hctx)
		scans = fullScans(hctx, q.c, q.sc, q.req)
		q.c.db.SetInterrupt(old)
		cancel()
	}
	if len(scans) > 0 {
		msg += "; the plan scans " + strings.Join(scans, ", ") + " in full: add an index or narrow the query"
	} else {
		msg += "; narrow the query"
	}
	return errorf(ErrQueryBudgetExceeded, "%s", msg)
}

// fullScans returns the application tables that the statement reads in
// full. It reads the statement's bytecode (EXPLAIN, prepared through the
// same sandbox, never run): a cursor opened on a table or one of its
// indexes and looped from its first row (Rewind) is a full scan. The plan's
// own text names aliases, not tables, so it is not used. It stops, with
// what it found, when budget ends.
func fullScans(budget context.Context, c *conn, sc *schema, req QueryRequest) []string {
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
	c.sandbox = &sandbox{sc: sc, budget: budget}
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
			if t := sc.byName[foldName(cursors[st.ColumnInt64(2)])]; t != nil && !seen[t.Name] {
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
				return bindError(st, strconv.Itoa(i+1), err)
			}
		}
		return nil
	}
	used := map[string]bool{} // one name may appear as :name, @name and $name
	for i := 1; i <= n; i++ {
		name := st.BindName(i)
		if name == "" || name[0] == '?' {
			return errorf(ErrInvalidRequest, "the statement has positional parameters; send params as an array")
		}
		a, ok := req.Named[name[1:]]
		if !ok {
			return errorf(ErrInvalidRequest, "parameter %s has no value in params", name)
		}
		used[name[1:]] = true
		v, err := paramValue(a)
		if err != nil {
			return errorf(ErrInvalidRequest, "parameter %s: %s", name, err)
		}
		if err := bind(st, i, v); err != nil {
			return bindError(st, name, err)
		}
	}
	if len(used) != len(req.Named) {
		return errorf(ErrInvalidRequest, "params name %d values but the statement uses %d", len(req.Named), len(used))
	}
	return nil
}

// bindError explains the failure to bind the parameter name. A text
// longer than a query's values may be (Options.QueryMaxBytes, SQLite's
// length limit while it runs) is the caller's input reaching SQLite's
// limit: ErrInvalidRequest, not an internal error.
func bindError(st *sqlite3.Stmt, name string, err error) error {
	if errors.Is(err, sqlite3.TOOBIG) {
		return errorf(ErrInvalidRequest, "parameter %s is longer than the %d bytes a value of a query may hold", name, st.Conn().Limit(sqlite3.LIMIT_LENGTH, -1))
	}
	return err
}

// CheckQueryParam returns the error Query gives a parameter value (in
// QueryRequest's Args or Named) that it does not bind: any but nil, a
// string, an int or int64, a float64, a bool, or a json.Number in range.
// The Go client checks its parameters with it, so that a value the Store
// refuses is not sent in a JSON form the server would take.
func CheckQueryParam(v any) error {
	_, err := paramValue(v)
	return err
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
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return nil, errParamKind
		case err != nil || math.IsInf(f, 0):
			return nil, errors.New("the number is out of range")
		case !strings.ContainsAny(string(x), ".eE"):
			// An integer written as one would be bound rounded, as a REAL.
			return nil, errors.New("the integer is out of the 64-bit range SQLite holds; send it as text, or with a fraction or an exponent to bind it as a REAL")
		}
		return f, nil
	}
	return nil, errParamKind
}

// errParamKind is a parameter value of a kind Query does not bind.
var errParamKind = errors.New("a parameter must be a string, number, boolean or null")

// resultColumns returns the statement's column names, a repeated name
// suffixed so that every row key is unique.
func resultColumns(st *sqlite3.Stmt) []string {
	n := st.ColumnCount()
	cols := make([]string, n)
	seen := make(map[string]bool, n)
	next := make(map[string]int) // a repeated name's next suffix to try: those below are taken
	for i := range n {
		base := st.ColumnName(i)
		name := base
		if seen[name] {
			k := max(next[base], 2)
			for name = base + "_" + strconv.Itoa(k); seen[name]; {
				k++
				name = base + "_" + strconv.Itoa(k)
			}
			next[base] = k + 1
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
		if f := st.ColumnFloat(i); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
		return st.ColumnText(i) // JSON has no infinity: SQLite's text, "Inf" or "-Inf"
	case sqlite3.TEXT:
		return st.ColumnText(i)
	case sqlite3.BLOB:
		return st.ColumnBlob(i, nil)
	}
	return nil
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
