//go:build !((linux || darwin) && !(sqlite3_flock || sqlite3_dotlk))

package projectdata

// walWatch is not built here: this build's WAL index is not a file of
// its own that a mapping could follow, so readers never keep a read
// transaction between reads.
type walWatch struct{}

func watchWAL(string) *walWatch { return nil }

func (*walWatch) stamp() (s walStamp, ok bool) { return s, false }

func (*walWatch) close() {}
