package projectdata

import (
	"slices"

	"github.com/ncruces/go-sqlite3"
)

// User queries are prepared once per reader connection and kept while the
// registry they were checked against is current: a repeated query (the
// same SQL text, other parameters) skips SQLite's parsing and planning and
// the sandbox's checks, which cost most of a point query. A statement is
// kept only once it passed every check (one statement, read-only, every
// read allowed), ran to its end and holds little memory
// (maxKeptQueryBytes). It runs again only with the same schema (the
// registry object, not just its version: one is loaded afresh whenever the
// registry may have changed) and always under a sandbox, so SQLite's own
// re-preparation after a schema change asks the authorizer again. That
// re-preparation (a schema changed behind the registry's back, by another
// program) may also change the result's columns: they are read again then
// (see followReprepare).

// maxCachedQueries bounds the user statements one connection keeps.
const maxCachedQueries = 32

// maxKeptQueryBytes is the most SQLite memory a kept statement may hold: a
// point query's program takes a few KiB, one of thousands of common table
// expressions megabytes. With maxCachedQueries, a reader's kept statements
// hold at most 1 MiB of its usual heap (usualQueryHeap).
const maxKeptQueryBytes = 32 << 10

// userStatement is a kept user query, the schema it was checked with, and
// its result's columns (see resultColumns) and their JSON keys.
type userStatement struct {
	st      *sqlite3.Stmt
	sc      *schema
	columns []string
	keys    rowKeys
	// reprepares is how often SQLite had prepared st again when columns
	// were read.
	reprepares int
}

// cachedQuery returns the kept statement of sql, if it was checked with sc.
// A statement kept under another schema is finalized.
func (c *conn) cachedQuery(sql string, sc *schema) (*userStatement, bool) {
	if c.queries == nil {
		return nil, false
	}
	u, ok := c.queries.get(sql)
	if !ok {
		return nil, false
	}
	if u.sc != sc {
		c.forgetQuery(sql)
		return nil, false
	}
	return u, true
}

// keepQuery keeps st, a checked statement of sql that ran to its end, with
// its result's columns, finalizing the least recently used beyond
// maxCachedQueries.
func (c *conn) keepQuery(sql string, sc *schema, st *sqlite3.Stmt, columns []string) {
	if c.queries == nil {
		c.queries = newLRU[*userStatement]()
	}
	c.forgetQuery(sql)
	c.queries.add(sql, &userStatement{st: st, sc: sc, columns: slices.Clone(columns), keys: newRowKeys(columns),
		reprepares: st.Status(sqlite3.STMTSTATUS_REPREPARE, false)})
	for _, u := range c.queries.trim(maxCachedQueries, func(*userStatement) bool { return true }) {
		u.st.Close()
	}
}

// followReprepare reads the result's columns again if SQLite prepared the
// statement again since they were read (it does so inside a step, when the
// schema changed), and reports whether it did.
func (u *userStatement) followReprepare() bool {
	n := u.st.Status(sqlite3.STMTSTATUS_REPREPARE, false)
	if n == u.reprepares {
		return false
	}
	u.columns = resultColumns(u.st)
	u.keys = newRowKeys(u.columns)
	u.reprepares = n
	return true
}

// forgetQuery finalizes the kept statement of sql, if any.
func (c *conn) forgetQuery(sql string) {
	if c.queries == nil {
		return
	}
	if u, ok := c.queries.get(sql); ok {
		c.queries.removeIf(sql, func(*userStatement) bool { return true })
		u.st.Close()
	}
}
