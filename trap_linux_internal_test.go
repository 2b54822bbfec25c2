package projectdata

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// TestTrappedReaderGivesItsFilesBack traps a reader and checks that its
// files are closed at once (their locks with them: its read mark would
// pin the WAL, which a truncating checkpoint would then find busy) and
// that reads go on.
func TestTrappedReaderGivesItsFilesBack(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	// Without a checkpointer, whose connection (kept a while after each
	// checkpoint) could open or close between the two counts, nor a change
	// log, whose prune (started by the first commit) reads in a goroutine
	// of its own.
	s := itemsStore(t, &Options{ReplicatorCheckpoints: true, changeLogOff: true})
	_, err := s.Insert(ctx, "acme", "items", []Row{{"name": "a"}})
	is.NoErr(err)
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	defer s.release(p)
	is.NoErr(p.read(ctx, func(c *conn) error { return nil })) // a reader in the pool
	before := openFilesUnder(t, p.dir)

	err = p.read(ctx, likeBomb) // in a read transaction, which holds a read mark
	is.Equal(err, errReaderTrap)
	is.True(openFilesUnder(t, p.dir) < before) // the reader's files (the database, its WAL, shm) are closed

	_, err = s.Insert(ctx, "acme", "items", []Row{{"name": "b"}})
	is.NoErr(err)
	busy := int64(-1)
	err = p.writer.query(`PRAGMA wal_checkpoint(TRUNCATE)`, nil, func(st *sqlite3.Stmt) error {
		busy = st.ColumnInt64(0)
		return nil
	})
	is.NoErr(err)
	is.Equal(busy, int64(0)) // no reader holds the log
	list, err := s.ListRecords(ctx, "acme", "items", ListOptions{})
	is.NoErr(err)
	is.Equal(*list.Total, int64(2))

	// The point-read connection too, which point reads open while the
	// writer is busy.
	p.wsem <- struct{}{}
	err = p.readPoint(ctx, likeBomb)
	<-p.wsem
	is.Equal(err, errReaderTrap)
	is.True(p.point == nil)
	is.True(p.pointOpened.Load())
	row, err := s.GetRecord(ctx, "acme", "items", 2)
	is.NoErr(err)
	is.Equal(row["name"], "b")
}

// openFilesUnder counts the files under dir the process holds open.
func openFilesUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}
