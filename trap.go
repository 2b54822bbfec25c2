package projectdata

import (
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// A trap is SQLite's code failing inside its WebAssembly instance (its
// stack overflowed, say): the driver panics with a runtime error, and the
// instance can run nothing more, not even its own close. Input is bounded
// so that no known statement traps (see MaxLikePattern, maxQuerySelects);
// these are what keeps one that does from costing more than its request:
// the connection is dropped and what it holds given back (its files, their
// locks, its memory), and a writer's project is opened anew.

// sqliteModule is the package of SQLite compiled to Go from WebAssembly.
const sqliteModule = "github.com/ncruces/go-sqlite3-wasm/"

// isTrap reports whether v, the panic being recovered, is a trap. It must
// be called from the deferred function that recovers, while the panicking
// frames are still on the stack.
func isTrap(v any) bool {
	_, ok := v.(runtime.Error)
	return ok && panickedInSQLite()
}

// panickedInSQLite reports whether the panic being recovered was raised in
// SQLite's own code rather than in ours (see isTrap).
func panickedInSQLite() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, sqliteModule) {
			return true
		}
		if !more {
			return false
		}
	}
}

// releaseInstance gives back what the instance of a trapped connection
// holds: its files, with their locks (a reader's mark pins the WAL, the
// writer's lock stops every write), and its memory (a reservation of
// hundreds of megabytes of address space). Closing the connection would
// run SQLite's code, which a trap leaves unable to run, and the driver
// has no other way: this calls the Close of the driver's wrapper of the
// instance, which is Go code only (it closes the files and unmaps the
// memory), through reflection, and leaves the connection without an
// instance, so that a second call does nothing. A version of the driver
// that changes what this relies on makes it do nothing: then
// TestTrappedReaderGivesItsFilesBack fails.
func releaseInstance(db *sqlite3.Conn) {
	f := reflect.ValueOf(db).Elem().FieldByName("wrp")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return
	}
	wrp := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	closeFn := wrp.MethodByName("Close")
	if !closeFn.IsValid() || closeFn.Type().NumIn() != 0 {
		return
	}
	closeFn.Call(nil)
	wrp.Set(reflect.Zero(f.Type()))
}

// errWriterFault answers the writes of a project whose writer trapped:
// the project is opened anew for the next operation, so a retry runs on a
// new writer. The write that trapped rolled back with its transaction.
func errWriterFault(slug string) error {
	return errorf(ErrServerBusy, "project %q is being reopened after a fault of its writer; retry", slug)
}

// writerTrapped handles a trap of the writer c: it is given back, writes
// to p fail fast from now on, and the Store drops p, which its last
// operation closes, so that the next operation opens the project anew.
// The caller recovered the trap and makes no other call into c.
func (p *project) writerTrapped(c *conn) {
	c.trapped = true
	if p.faulted.Swap(true) {
		return
	}
	p.store.opts.Logger.Error("the writer of a project trapped in SQLite's code: the project is reopened", "project", p.slug)
	releaseInstance(c.db)
	p.store.drop(p)
}

// errReaderTrap is the error of a read whose connection trapped.
var errReaderTrap = errors.New("a read connection trapped in SQLite's code")

// recoverReaderTrap, deferred by the reads, turns a trap of the reader c
// into errReaderTrap, marking c trapped so that it is closed (given back),
// not pooled. Other panics go on.
func recoverReaderTrap(c *conn, err *error) {
	if v := recover(); v != nil {
		if !isTrap(v) {
			panic(v)
		}
		c.trapped = true
		*err = errReaderTrap
	}
}
