//go:build linux

package projectdata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// fullDiskChildEnv names the folder a full-disk child mounts its small
// file system on (see fullDiskChild).
const fullDiskChildEnv = "PROJECTDATA_FULL_DISK_CHILD"

func init() {
	if dir := os.Getenv(fullDiskChildEnv); dir != "" { // before TestMain
		fullDiskChild(dir)
		os.Exit(0)
	}
}

// fullDiskChild runs in a mount namespace of its own (see
// TestFullDiskLosesNothing): it mounts a file system of 2 MiB on dir, fills
// it with a reserve file and a project, writes until the disk is full, then
// frees the reserve and writes again, and prints what it saw, a line each.
func fullDiskChild(dir string) {
	ctx := context.Background()
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		say("mount %v", err)
		return
	}
	reserve := filepath.Join(dir, "reserve")
	if err := os.WriteFile(reserve, make([]byte, 256<<10), 0o600); err != nil {
		say("reserve %v", err)
		return
	}
	data := filepath.Join(dir, "data")
	s, err := projectdata.Open(data, nil)
	if err == nil {
		_, _, err = s.CreateProject(ctx, "acme", "")
	}
	if err == nil {
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	}
	if err != nil {
		say("setup %v", err)
		return
	}
	body := strings.Repeat("x", 2000)
	count := func(s *projectdata.Store) int {
		n := 0
		for _, err := range s.Rows(ctx, "acme", "items", projectdata.ListOptions{Columns: []string{"id"}}) {
			if err != nil {
				say("read %v", err)
				return -1
			}
			n++
		}
		return n
	}

	acked := 0
	for {
		_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{{"body": body}})
		if err != nil {
			say("full %s %t %v", projectdata.ErrorCode(err), errors.Is(err, sqlite3.FULL), err)
			break
		}
		acked++
		if acked > 10000 {
			say("never full")
			return
		}
	}
	say("acked %d", acked)
	// More writes of every kind fail while the disk is full; none is
	// acknowledged, and reads go on.
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"body": body}, {"body": body}})
	say("insert %s", projectdata.ErrorCode(err))
	_, err = s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{Data: projectdata.Row{"body": body + "y"}, Where: projectdata.Where{{Column: "id", Op: projectdata.WhereGt, Value: 0}}})
	say("update %s", projectdata.ErrorCode(err))
	_, err = s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "more"})
	say("column %s", projectdata.ErrorCode(err))
	say("count %d", count(s))

	if err := os.Remove(reserve); err != nil {
		say("free %v", err)
		return
	}
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"body": "after"}})
	say("after %s", projectdata.ErrorCode(err))
	say("count %d", count(s))
	if err := s.Close(); err != nil {
		say("close %v", err)
	}
	raw, err := sqlite3.Open(filepath.Join(data, "acme", "project.db"))
	if err == nil {
		st, _, err := raw.Prepare(`PRAGMA integrity_check`)
		if err == nil && st.Step() {
			say("integrity %s", st.ColumnText(0))
			st.Close()
		} else {
			say("integrity %v", err)
		}
		raw.Close()
	}
	s, err = projectdata.Open(data, nil)
	if err != nil {
		say("reopen %v", err)
		return
	}
	defer s.Close()
	say("count %d", count(s))
}

// TestFullDiskLosesNothing: on a full disk, every write fails, none is
// acknowledged and nothing half-written stays; reads go on; once there is
// room again, writes succeed without a restart, and every acknowledged row
// is there, before and after the project is opened anew. The child works
// on a small tmpfs in a mount namespace of its own (a user namespace lets
// it mount without privileges).
func TestFullDiskLosesNothing(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fullDiskChildEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) && os.Getuid() != 0 {
		t.Skipf("this system allows no user namespace to mount a small disk in: %v", err)
	}
	t.Logf("child:\n%s", out)
	is.NoErr(err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var acked int
	if len(lines) > 1 {
		fmt.Sscanf(lines[1], "acked %d", &acked)
	}
	is.True(acked > 0)
	is.Equal(lines, []string{
		"full internal_error true sqlite3: database or disk is full", // said so, not "disk I/O error"
		fmt.Sprint("acked ", acked),
		"insert internal_error", // nothing more acknowledged
		"update internal_error",
		"column internal_error",
		fmt.Sprint("count ", acked), // nothing lost, reads go on
		"after ",                    // room again: the next write succeeds
		fmt.Sprint("count ", acked+1),
		"integrity ok",
		fmt.Sprint("count ", acked+1), // opened anew
	})
}
