package projectdata

import (
	"errors"
	"os"
	"syscall"

	"github.com/ncruces/go-sqlite3"
)

// busyIfUnavailable turns a failure for want of something the process
// shares into ErrServerBusy: file descriptors (opening a file failed with
// EMFILE or ENFILE, or SQLite could not open one, CANTOPEN, which does not
// say why, while the process cannot open any file either), or the
// project's database file, which another connection (another process on
// the folder) kept locked past Options.BusyTimeout. Anything else is
// returned as it is.
func busyIfUnavailable(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sqlite3.BUSY) {
		return errLockedByAnother()
	}
	exhausted := isFDExhaustion(err)
	if !exhausted && errors.Is(err, sqlite3.CANTOPEN) {
		f, perr := os.Open(os.DevNull)
		if perr == nil {
			f.Close()
		}
		exhausted = isFDExhaustion(perr)
	}
	if exhausted {
		return errorf(ErrServerBusy, "the server has no file descriptor free; retry")
	}
	return err
}

// errLockedByAnother is the error of an operation that waited
// Options.BusyTimeout for a lock of the project's database that another
// connection (another Store or process on the folder) held.
func errLockedByAnother() error {
	return errorf(ErrServerBusy, "the project's database stayed locked by another connection for longer than the busy timeout; retry")
}

// isFDExhaustion reports whether err is the system's "too many open
// files", for the process or the whole system.
func isFDExhaustion(err error) bool {
	return err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE))
}
