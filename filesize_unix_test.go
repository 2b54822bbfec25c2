//go:build unix

package projectdata_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// fileSizeChildEnv holds "snapshot DIR" or "restore DIR SOURCE": a child
// process lowers its file size limit to 256 KB (which the test process
// itself cannot do: go test writes its own log) and takes a snapshot of
// project acme of the data folder DIR, or restores SOURCE as project copy,
// and prints the error's code and message.
const fileSizeChildEnv = "PROJECTDATA_FILE_SIZE_CHILD"

func init() {
	if args := os.Getenv(fileSizeChildEnv); args != "" { // before TestMain
		fileSizeChild(args)
		os.Exit(0)
	}
}

func fileSizeChild(args string) {
	ctx := context.Background()
	f := strings.Fields(args)
	s, err := projectdata.Open(f[1], nil)
	if err != nil {
		fmt.Println("open", err)
		return
	}
	defer s.Close()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("getrlimit", err)
		return
	}
	lim.Cur = 256 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit", err)
		return
	}
	if f[0] == "snapshot" {
		_, err = s.CreateProjectExport(ctx, "acme")
	} else {
		_, err = s.RestoreProject(ctx, "copy", f[2])
	}
	fmt.Println(projectdata.ErrorCode(err), err)
}

// runFileSizeChild runs fileSizeChild with args and returns what it printed.
func runFileSizeChild(t *testing.T, args string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fileSizeChildEnv+"="+args)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// sizedProject makes project acme of about 1 MB in a new Store, open.
func sizedProject(t *testing.T) (*projectdata.Store, string) {
	t.Helper()
	s, dir := pdtest.Open(t, nil)
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}}); err != nil {
		t.Fatal(err)
	}
	rows := make([]projectdata.Row, 2000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("x", 500)}
	}
	if _, err := s.Insert(ctx, "acme", "notes", rows); err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// TestSnapshotPastTheFileSizeLimitLeavesNothing: a snapshot that fails
// part way (past the file size limit, as on a full disk) leaves no file in
// the exports folder, SQLite's journal of the temporary file included.
func TestSnapshotPastTheFileSizeLimitLeavesNothing(t *testing.T) {
	is := is.New(t)
	s, dir := sizedProject(t)
	out := runFileSizeChild(t, "snapshot "+dir)
	t.Log(out)
	is.True(strings.HasPrefix(out, "internal_error ")) // failed writing
	is.Equal(dataFolder(t, filepath.Join(dir, "acme", "exports")), []string{})
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(len(page.Exports), 0)
}

// TestRestorePastTheFileSizeLimitIsNoUnsoundSource: a restore that cannot
// write its copy (past the file size limit, as on a full disk) fails as
// the server's fault, never as a source said to be unsound (an operator
// would throw a good replica away), and leaves nothing.
func TestRestorePastTheFileSizeLimitIsNoUnsoundSource(t *testing.T) {
	is := is.New(t)
	_, srcDir := sizedProject(t) // open: its commits are in its log, copied by SQLite
	dir := t.TempDir()
	out := runFileSizeChild(t, "restore "+dir+" "+filepath.Join(srcDir, "acme", "project.db"))
	t.Log(out)
	is.True(strings.HasPrefix(out, "internal_error ")) // not invalid_request
	is.Equal(dataFolder(t, dir), []string{})
}
