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
// re-preparation (of a schema changed behind the registry's back, by
// another program) may change the result's columns too: queryRun.run then
// reads them again, and keeps them with the statement.

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
	c.queries.add(sql, &userStatement{st: st, sc: sc, columns: slices.Clone(columns), keys: newRowKeys(columns)})
	for _, u := range c.queries.trim(maxCachedQueries, func(*userStatement) bool { return true }) {
		u.st.Close()
	}
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
