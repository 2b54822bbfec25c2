//go:build !((linux || darwin) && !(sqlite3_flock || sqlite3_dotlk))

package projectdata

// walWatchBuilt says whether this build watches the WAL index, so that
// readers park (see walstamp_other.go).
const walWatchBuilt = false
