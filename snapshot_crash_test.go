package projectdata_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// snapCrashChildEnv names the data folder a snapshot crash child works in.
const snapCrashChildEnv = "PROJECTDATA_SNAPSHOT_CRASH_CHILD"

// snapCrashChild takes snapshots of "acme" and restores each under a new
// slug until it is killed, acknowledging each on stdout once it returned:
// E export id, R restored slug, F failure.
func snapCrashChild(dir string) {
	ctx := context.Background()
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		fmt.Println("F", err)
		return
	}
	run := time.Now().UnixNano() % 1e9
	for i := 0; ; i++ {
		e, err := s.CreateProjectExport(ctx, "acme")
		if err != nil {
			fmt.Println("F export", err)
			return
		}
		fmt.Println("E", e.ID)
		slug := fmt.Sprintf("r%d-%d", run, i)
		if _, err := s.RestoreProject(ctx, slug, filepath.Join(dir, "acme", "exports", e.ID+".sqlite")); err != nil {
			fmt.Println("F restore", err)
			return
		}
		fmt.Println("R", slug)
	}
}

// TestSnapshotAndRestoreCrashSafety kills a process taking snapshots and
// restoring them at many points: after each kill the data folder holds
// whole projects (the acknowledged ones among them) and whole snapshots
// (the acknowledged ones among them), and what the kill left half-made
// (temporary project folders, temporary snapshot files) is hidden, and
// removed once old.
func TestSnapshotAndRestoreCrashSafety(t *testing.T) {
	killPoints := crashKillPoints(8, 3, 25)
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 10000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("x", 200)}
	}
	for range 2 {
		_, err = s.Insert(ctx, "acme", "notes", rows)
		is.NoErr(err)
	}
	is.NoErr(s.Close())

	exports, restored := map[string]bool{}, map[string]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range killPoints {
		cmd, lines := startChild(t, snapCrashChildEnv+"="+dir)
		ack := func(line string) {
			kind, arg, _ := strings.Cut(line, " ")
			switch kind {
			case "E":
				exports[arg] = true
			case "R":
				restored[arg] = true
			case "F":
				t.Fatalf("kill point %d: child failed: %s", k, arg)
			}
		}
		killChild(t, k, cmd, lines, 1+rng.IntN(4), time.Duration(rng.IntN(30000))*time.Microsecond, ack)
		checkAfterSnapshotCrash(t, k, dir, exports, restored)
	}

	// What the kills left half-made goes once it is old.
	old := time.Now().Add(-2 * time.Hour)
	age := func(path string) {
		entries, _ := os.ReadDir(path)
		for _, e := range entries {
			is.NoErr(os.Chtimes(filepath.Join(path, e.Name()), old, old))
		}
		is.NoErr(os.Chtimes(path, old, old))
	}
	for _, name := range dataFolder(t, dir) {
		if strings.HasPrefix(name, ".") {
			age(filepath.Join(dir, name))
		}
	}
	for _, name := range dataFolder(t, filepath.Join(dir, "acme", "exports")) {
		if strings.HasPrefix(name, ".") {
			is.NoErr(os.Chtimes(filepath.Join(dir, "acme", "exports", name), old, old))
		}
	}
	s, err = projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	_, _, err = s.GetProject(ctx, "acme") // opening it sweeps its exports folder
	is.NoErr(err)
	for _, name := range dataFolder(t, dir) {
		is.True(!strings.HasPrefix(name, ".")) // no temporary project folder left
	}
	for _, name := range dataFolder(t, filepath.Join(dir, "acme", "exports")) {
		is.True(!strings.HasPrefix(name, ".")) // no temporary snapshot file left
	}
	t.Logf("%d kill points, %d snapshots, %d restores acknowledged", killPoints, len(exports), len(restored))
}

// checkAfterSnapshotCrash reopens the data folder after a kill: every
// project opens whole, every acknowledged one is there, every snapshot
// listed matches its manifest, every acknowledged one is listed, and
// nothing else is visible.
func checkAfterSnapshotCrash(t *testing.T, k int, dir string, exports, restored map[string]bool) {
	t.Helper()
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		t.Fatalf("kill point %d: reopen: %v", k, err)
	}
	defer s.Close()
	projects, err := s.ListProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range projects {
		listed[p.Slug] = true
		l, err := s.ListRecords(ctx, p.Slug, "notes", projectdata.ListOptions{Limit: 1})
		if err != nil {
			t.Fatalf("kill point %d: project %s: %v", k, p.Slug, err)
		}
		if *l.Total != 20000 {
			t.Fatalf("kill point %d: project %s has %d rows", k, p.Slug, *l.Total)
		}
		raw := pdtest.Raw(t, dir, p.Slug)
		if got := rawText(t, raw, `PRAGMA integrity_check`); got != "ok" {
			t.Fatalf("kill point %d: project %s: %s", k, p.Slug, got)
		}
		raw.Close()
	}
	for slug := range restored {
		if !listed[slug] {
			t.Fatalf("kill point %d: acknowledged restore %s lost", k, slug)
		}
	}
	for _, name := range dataFolder(t, dir) {
		if !listed[name] && !strings.HasPrefix(name, ".restoring-") {
			t.Fatalf("kill point %d: %s in the data folder is no project", k, name)
		}
	}
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range page.Exports {
		ids[e.ID] = true
		if e.Status != "ready" {
			t.Fatalf("kill point %d: export %s is %s", k, e.ID, e.Status)
		}
		size, sum := fileDigest(t, snapshotFile(dir, "acme", e.ID))
		if size != e.SizeBytes || sum != e.SHA256 {
			t.Fatalf("kill point %d: snapshot %s does not match its manifest", k, e.ID)
		}
	}
	for id := range exports {
		if !ids[id] {
			t.Fatalf("kill point %d: acknowledged snapshot %s lost", k, id)
		}
	}
	for _, name := range dataFolder(t, filepath.Join(dir, "acme", "exports")) {
		id, isSnap := strings.CutSuffix(name, ".sqlite")
		if !strings.HasPrefix(name, ".") && !(isSnap && ids[id]) {
			t.Fatalf("kill point %d: %s in the exports folder is no snapshot listed", k, name)
		}
	}
}
