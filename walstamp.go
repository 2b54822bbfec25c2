//go:build (linux || darwin) && !(sqlite3_flock || sqlite3_dotlk)

package projectdata

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The WAL index (the database's -shm file, https://sqlite.org/walformat.html)
// starts with two copies of its 48-byte header, then the checkpoint
// information, whose first word is nBackfill. The driver maps the file
// shared (this build's locks are OFD locks: the descriptor opened here and
// closed at once takes none of them away), so a mapping of ours sees every
// commit of every connection as it is made.
const (
	walHeaderWords  = 12                 // one copy of the header
	walBackfillWord = 2 * walHeaderWords // nBackfill
	walIndexMapped  = 4 * (walBackfillWord + 1)
	walIndexVersion = 3007000 // iVersion of every WAL index to date
)

// walWatch reads a project's WAL index header.
type walWatch struct {
	mem []byte
}

// watchWAL maps the WAL index of the database at dbPath, or returns nil
// when it cannot (no WAL index yet): its readers then never keep a read
// transaction between reads.
func watchWAL(dbPath string) *walWatch {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	// SQLite grows the file in 32 KiB regions and empties it only when no
	// connection has it open, which the project's writer always has.
	if fi, err := f.Stat(); err != nil || fi.Size() < 32<<10 {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walIndexMapped, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	w := &walWatch{mem: mem}
	if _, ok := w.stamp(); !ok {
		w.close()
		return nil
	}
	return w
}

// stamp returns the WAL index header and nBackfill as they are now, or
// false when a writer is changing the header (its two copies differ) or
// there is no watch. Every commit changes the header (mxFrame, iChange),
// and every checkpoint that copied frames changes nBackfill: while the
// stamp stays the same, the database has not changed.
func (w *walWatch) stamp() (s walStamp, ok bool) {
	if w == nil {
		return s, false
	}
	// SQLite writes the second copy, then the first; a reader that reads
	// the first, then the second, and finds them equal has read a whole
	// header (as walIndexTryHdr does).
	for i := range walHeaderWords {
		s[i] = w.word(i)
	}
	for i := range walHeaderWords {
		if w.word(walHeaderWords+i) != s[i] {
			return s, false
		}
	}
	if s[0] != walIndexVersion || w.mem[12] == 0 { // iVersion, isInit
		return s, false
	}
	s[walHeaderWords] = w.word(walBackfillWord)
	return s, true
}

func (w *walWatch) word(i int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[4*i])))
}

func (w *walWatch) close() {
	if w != nil {
		syscall.Munmap(w.mem)
	}
}
