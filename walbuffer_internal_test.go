package projectdata

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// countingVFS is the os VFS counting the writes that reach its WAL files.
type countingVFS struct {
	vfs.VFSFilename
	walWrites *walWrites
}

// walWrites counts writes, and keeps the size of the largest.
type walWrites struct {
	atomic.Int64
	largest atomic.Int64
}

func (v countingVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, out, err := v.VFSFilename.OpenFilename(name, flags)
	if err == nil && flags&vfs.OPEN_WAL != 0 {
		f = countingFile{f, v.walWrites}
	}
	return f, out, err
}

type countingFile struct {
	vfs.File
	writes *walWrites
}

func (f countingFile) WriteAt(p []byte, off int64) (int, error) {
	f.writes.Add(1)
	for n := f.writes.largest.Load(); int64(len(p)) > n && !f.writes.largest.CompareAndSwap(n, int64(len(p))); n = f.writes.largest.Load() {
	}
	return f.File.WriteAt(p, off)
}

// countingVFSes are the VFSes countingWALVFS registered, by name.
var countingVFSes = map[string]*walWrites{}

// countingWALVFS registers (once per name) walBufferVFS over a
// countingVFS, or the countingVFS alone, and returns its counter.

func countingWALVFS(name string, buffered bool) *walWrites {
	if n, ok := countingVFSes[name]; ok {
		return n
	}
	n := new(walWrites)
	var v vfs.VFSFilename = countingVFS{vfs.Find("os").(vfs.VFSFilename), n}
	if buffered {
		v = walBufferVFS{v}
	}
	vfs.Register(name, v)
	countingVFSes[name] = n
	return n
}

func TestWALBuffer(t *testing.T) {
	// open opens path with the named VFS, in WAL mode.
	open := func(t *testing.T, path, vfsName string) *sqlite3.Conn {
		t.Helper()
		db, err := sqlite3.OpenFlags("file:"+path+"?vfs="+vfsName, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE|sqlite3.OPEN_URI)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0`); err != nil {
			t.Fatal(err)
		}
		return db
	}
	// commits makes n commits of two rows each, each row a page or more.
	commits := func(t *testing.T, db *sqlite3.Conn, n int) {
		t.Helper()
		if err := db.Exec(`CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := db.Exec(`BEGIN; INSERT INTO t (v) VALUES (zeroblob(5000)), (zeroblob(5000)); COMMIT`); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(t *testing.T, db *sqlite3.Conn) int64 {
		t.Helper()
		st, _, err := db.Prepare(`SELECT count(*) FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if !st.Step() {
			t.Fatal(st.Err())
		}
		return st.ColumnInt64(0)
	}

	t.Run("EachCommitIsOneWrite", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "b.db")
		writes := countingWALVFS("test-counting-walbuffer", true)
		db := open(t, path, "test-counting-walbuffer")
		commits(t, db, 1) // the table, and the log's header
		before := writes.Load()
		commits(t, db, 20)
		is.Equal(writes.Load()-before, int64(20)) // several frames each, one write each

		// Unbuffered, the same commits take two writes per frame.
		plain := countingWALVFS("test-counting-plain", false)
		db2 := open(t, filepath.Join(t.TempDir(), "p.db"), "test-counting-plain")
		commits(t, db2, 1)
		before = plain.Load()
		commits(t, db2, 20)
		is.True(plain.Load()-before >= 20*2*4) // at least four frames a commit
	})

	t.Run("ACommitIsInTheFileForOtherConnections", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "b.db")
		countingWALVFS("test-counting-walbuffer", true)
		w := open(t, path, "test-counting-walbuffer")
		commits(t, w, 1)
		r := open(t, path, "os") // reads the WAL file with no buffer of its own
		for i := range 10 {
			commits(t, w, 1)
			is.Equal(count(t, r), int64(2*(i+2)))
		}
	})

	t.Run("ALargeTransactionIsWrittenInPieces", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "b.db")
		writes := countingWALVFS("test-counting-walbuffer", true)
		w := open(t, path, "test-counting-walbuffer")
		commits(t, w, 1)
		before := writes.Load()
		writes.largest.Store(0)
		// 1,000 pages in one commit, about 4 MB of frames: many buffers'
		// worth.
		is.NoErr(w.Exec(`INSERT INTO t (v) SELECT zeroblob(3000) FROM (WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 1000) SELECT n FROM i)`))
		n := writes.Load() - before
		pieces := int64(1000 * (4096 + walFrameHeader) / maxWALBuffer)
		is.True(n >= pieces && n <= 2*pieces)                  // pieces of maxWALBuffer, not 2 per frame
		is.True(writes.largest.Load() <= maxWALBuffer)         // the buffer never held more
		is.True(writes.largest.Load() > maxWALBuffer-4096-100) // and was full before it was written
		r := open(t, path, "os")
		is.Equal(count(t, r), int64(1002))
	})

	t.Run("TheStoreOpensWithItWhateverThePath", func(t *testing.T) {
		// The Store's connections use the VFS, and a path with the
		// characters a URI gives a meaning to opens the file of that
		// name.
		is := is.New(t)
		dir := filepath.Join(t.TempDir(), "a b?c#d%20e")
		is.NoErr(os.Mkdir(dir, 0o700))
		path := filepath.Join(dir, "x.db")
		db, err := sqlite3.OpenFlags(path, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE)
		is.NoErr(err)
		is.NoErr(db.Exec(`PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)`))
		is.NoErr(db.Close())
		c, err := openConn(path, false, time.Second)
		is.NoErr(err)
		defer c.close()
		name, err := c.db.FileControl("main", sqlite3.FCNTL_VFSNAME)
		is.NoErr(err)
		is.Equal(name, walBufferVFSName)
		is.NoErr(c.exec(`INSERT INTO t (v) VALUES (1)`))
		_, err = os.Stat(path + "-wal")
		is.NoErr(err)
		entries, err := os.ReadDir(dir)
		is.NoErr(err)
		is.Equal(len(entries), 3) // x.db, its WAL and its index: no other file
	})
}
