//go:build unix

package projectdata_test

import (
	"os"
	"path/filepath"
	"strings"
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
	snapshot := newestSnapshot(t, src)
	s, dir := pdtest.Open(t, nil)
	t.Run("Exhausted", func(t *testing.T) { // gives the descriptors back when it ends
		exhaustFDs(t)
		_, err := s.RestoreProject(ctx, "copy", snapshot)
		pdtest.Code(t, err, projectdata.ErrServerBusy)
	})
	is := is.New(t)
	is.Equal(dataFolder(t, dir), []string{})
}

// TestSnapshotPastTheFileSizeLimitLeavesNothing: a snapshot that fails
// part way (here past the process's file size limit, as on a full disk)
// leaves no file in the exports folder, SQLite's journal of the
// temporary file included.
func TestSnapshotPastTheFileSizeLimitLeavesNothing(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 2000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("x", 500)}
	}
	_, err = s.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	_, err = s.ListTables(ctx, "acme") // a reader open
	is.NoErr(err)

	t.Run("Limited", func(t *testing.T) {
		is := is.New(t)
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Skip("no RLIMIT_FSIZE:", err)
		}
		low := lim
		low.Cur = 256 << 10 // the snapshot is about 1 MB
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low); err != nil {
			t.Skip("cannot lower RLIMIT_FSIZE:", err)
		}
		defer syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
		_, err := s.CreateProjectExport(ctx, "acme")
		is.True(err != nil)
		t.Log(err)
	})
	is.Equal(dataFolder(t, filepath.Join(dir, "acme", "exports")), []string{})
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(len(page.Exports), 0)
}

// TestRestorePastTheFileSizeLimitIsNoUnsoundSource: a restore that cannot
// write its copy (here past the process's file size limit, as on a full
// disk) fails as the server's fault, never as a source said to be unsound
// (an operator would throw a good replica away), and leaves nothing.
func TestRestorePastTheFileSizeLimitIsNoUnsoundSource(t *testing.T) {
	is := is.New(t)
	src, srcDir := pdtest.Open(t, nil)
	_, _, err := src.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 2000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("x", 500)}
	}
	_, err = src.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	live := filepath.Join(srcDir, "acme", "project.db") // open: its commits are in its log, copied by SQLite
	s, dir := pdtest.Open(t, nil)
	t.Run("Limited", func(t *testing.T) {
		is := is.New(t)
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Skip("no RLIMIT_FSIZE:", err)
		}
		low := lim
		low.Cur = 256 << 10 // the database is about 1 MB
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low); err != nil {
			t.Skip("cannot lower RLIMIT_FSIZE:", err)
		}
		defer syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
		_, err := s.RestoreProject(ctx, "copy", live)
		is.True(err != nil)
		t.Log(err)
		is.True(projectdata.ErrorCode(err) != projectdata.ErrInvalidRequest)
	})
	is.Equal(dataFolder(t, dir), []string{})
}
