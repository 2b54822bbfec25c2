package projectdata

import (
	"errors"
	"os"
	"syscall"

	"github.com/ncruces/go-sqlite3"
)

// busyIfExhausted turns a failure for want of file descriptors into
// ErrServerBusy: opening a file failed with EMFILE or ENFILE, or SQLite
// could not open one (CANTOPEN, which does not say why) while the process
// cannot open any file either. Anything else is returned as it is.
func busyIfExhausted(err error) error {
	if err == nil {
		return nil
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

// isFDExhaustion reports whether err is the system's "too many open
// files", for the process or the whole system.
func isFDExhaustion(err error) bool {
	return err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE))
}
