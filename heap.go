package projectdata

import (
	"strings"
	"sync"
)

// sqliteHeap accounts for the memory of every SQLite connection of the
// Store, against Options.MaxSQLiteMemory. Each connection is its own SQLite
// instance, whose heap never shrinks while it is open: an open connection
// counts for the usual heap of a reader (usualQueryHeap; user queries run
// within it), and a query that needs more reserves its whole budget
// (Options.QueryMaxMemory) for as long as its reader stays open, which is
// until the query ends: such a reader is closed, not pooled.
type sqliteHeap struct {
	max int64

	mu       sync.Mutex
	conns    int64 // open connections
	reserved int64 // bytes reserved by connections that grew
}

// track counts the new connection c until it closes.
func (h *sqliteHeap) track(c *conn) {
	h.mu.Lock()
	h.conns++
	h.mu.Unlock()
	c.heap = h
}

// reserve reserves n bytes for c, which is then closed when it goes back
// to the pool. It reports false, reserving nothing, when that would take
// the Store's SQLite memory past its cap.
func (h *sqliteHeap) reserve(c *conn, n int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns*usualQueryHeap+h.reserved+n > h.max {
		return false
	}
	h.reserved += n
	c.reserved += n
	c.discard = true
	return true
}

// closed gives back what the closed connection c counted for.
func (h *sqliteHeap) closed(c *conn) {
	h.mu.Lock()
	h.conns--
	h.reserved -= c.reserved
	h.mu.Unlock()
	c.reserved = 0
}

// inUse returns the bytes counted now.
func (h *sqliteHeap) inUse() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns*usualQueryHeap + h.reserved
}

// recoverDriverPanic turns the driver's panics during a user query into
// errors: out of memory becomes errQueryHeap; a name or text longer than
// the driver reads (1,000,000 bytes: an alias, a CTE, a parameter name),
// and a trap in SQLite's own code (its stack overflowed by a statement
// nested too deeply), ErrInvalidRequest. The connection was interrupted in
// the middle of SQLite's work, so it is closed, not pooled. Any other panic
// goes on.
func recoverDriverPanic(c *conn, err *error) {
	r := recover()
	if r == nil {
		return
	}
	if isTrap(r) {
		// SQLite's WebAssembly stack overflowed (a statement nested too
		// deeply to parse or plan, such as a long chain of CTEs): the
		// instance is unusable; closing c gives back what it holds.
		c.discard, c.trapped = true, true
		*err = errorf(ErrInvalidRequest, "the statement is nested too deeply for SQLite; simplify it")
		return
	}
	e, ok := r.(error)
	if !ok || !strings.HasPrefix(e.Error(), "sqlite3: ") {
		panic(r)
	}
	c.discard = true
	switch {
	case isOutOfMemory(r):
		*err = errQueryHeap
	case strings.Contains(e.Error(), "NUL terminator"):
		*err = errorf(ErrInvalidRequest, "the statement holds a name or text longer than SQLite allows (1,000,000 bytes)")
	default:
		panic(r)
	}
}

// isOutOfMemory reports whether r, recovered, is the driver's panic when
// SQLite's heap is full.
func isOutOfMemory(r any) bool {
	e, ok := r.(error)
	return ok && strings.HasPrefix(e.Error(), "sqlite3: ") && strings.Contains(e.Error(), "out of memory")
}
