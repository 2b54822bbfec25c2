//go:build unix

package projectdata_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// exhaustFDs opens files until the process has no descriptor left (under
// a lowered soft limit), and gives them back when the test ends.
func exhaustFDs(t *testing.T) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip("no RLIMIT_NOFILE:", err)
	}
	low := lim
	low.Cur = 512
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip("cannot lower RLIMIT_NOFILE:", err)
	}
	var held []*os.File
	t.Cleanup(func() {
		for _, f := range held {
			f.Close()
		}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	})
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return
		}
		held = append(held, f)
	}
}

func TestOutOfFileDescriptorsIsServerBusy(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.CreateProject(ctx, "other", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = s.ListTables(ctx, "acme") // acme is open, with a reader
	is.NoErr(err)

	exhaustFDs(t)
	_, _, err = s.GetProject(ctx, "other") // opening a project needs files
	pdtest.Code(t, err, projectdata.ErrServerBusy)
	_, err = s.CreateExport(ctx, "acme", "notes", "csv") // so does an export
	pdtest.Code(t, err, projectdata.ErrServerBusy)
}

// TestRestoreOutOfFileDescriptorsIsServerBusy: a restore that cannot open
// its source for want of descriptors is server_busy, not a source said to
// be unreadable, and leaves nothing behind.
func TestRestoreOutOfFileDescriptorsIsServerBusy(t *testing.T) {
	src, _ := pdtest.NewProject(t, nil)
	snapshot := pdtest.Snapshot(t, src)
	s, dir := pdtest.Open(t, nil)
	t.Run("Exhausted", func(t *testing.T) { // gives the descriptors back when it ends
		exhaustFDs(t)
		_, err := s.RestoreProject(ctx, "copy", snapshot)
		pdtest.Code(t, err, projectdata.ErrServerBusy)
	})
	is := is.New(t)
	is.Equal(dataFolder(t, dir), []string{})
}
