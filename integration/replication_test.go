//go:build unix

package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

// rpoWindow is how long before a crash an acknowledged write must have
// been for the replica to hold it: Litestream's sync interval (1 s) plus
// one second.
const rpoWindow = 2 * time.Second

// newReplicatedNode creates project acme (with table batches) in a new data
// folder and serves it with -replica under prefix (and the extra flags);
// it returns the server, the folder and the project's admin token.
func newReplicatedNode(t *testing.T, s3 *s3Server, prefix string, extra ...string) (*serverProc, string, string) {
	t.Helper()
	dir := t.TempDir()
	token := runServerCmd(t, "project", "create", "-data", dir, "acme")
	srv := startServer(t, dir, append([]string{"-replica", s3.url(prefix)}, extra...)...)
	srv.client(token).createBatches()
	return srv, dir, token
}

// restoreAndServe restores acme from its replica (at, when not empty) into
// a new folder, checks the database and serves it without replication.
func restoreAndServe(t *testing.T, s3 *s3Server, prefix, at string) (*serverProc, string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"project", "restore", "-data", dir, "-litestream", tools.litestream, "-from", s3.dbURL(prefix, "acme")}
	if at != "" {
		args = append(args, "-at", at)
	}
	start := time.Now()
	runServerCmd(t, append(args, "acme")...)
	t.Logf("restore took %v", time.Since(start))
	if got := integrityCheck(t, filepath.Join(dir, "acme", "project.db")); got != "ok" {
		t.Fatalf("integrity_check of the restored database: %s", got)
	}
	return startServer(t, dir), dir
}

// TestCrashKeepsAcknowledgedBatches writes batches through a server that
// replicates to S3, kills Litestream and the server with SIGKILL in the
// middle of the writes, restores the project on a new folder and serves it
// with a second server: every batch acknowledged rpoWindow before the kill
// is there, no batch is there in part, the token works and the database is
// sound.
func TestCrashKeepsAcknowledgedBatches(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	srv, _, token := newReplicatedNode(t, s3, "crash")
	c := srv.client(token)

	acked := map[int]time.Time{}
	writeFor := 6 * time.Second
	start := time.Now()
	for n := 1; time.Since(start) < writeFor; n++ {
		if err := c.insertBatch(n); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		acked[n] = time.Now()
		time.Sleep(5 * time.Millisecond)
	}
	// Mid-write: a writer keeps going while both processes are killed.
	stopWriter := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for n := len(acked) + 1; ; n++ {
			select {
			case <-stopWriter:
				return
			default:
			}
			c.insertBatch(n) // acknowledgements from here on are not counted
		}
	}()
	time.Sleep(200 * time.Millisecond)
	pids := srv.litestreamPIDs()
	is.Equal(len(pids), 1)
	killedAt := time.Now()
	is.NoErr(syscall.Kill(pids[0], syscall.SIGKILL))
	srv.kill()
	close(stopWriter)
	<-writerDone

	restored, _ := restoreAndServe(t, s3, "crash", "")
	counts := restored.client(token).batchCounts() // the token works
	lost, lostAcked, oldestLost := 0, []int{}, time.Duration(0)
	for n, at := range acked {
		if counts[n] == 0 {
			lost++
			oldestLost = max(oldestLost, killedAt.Sub(at))
			if killedAt.Sub(at) >= rpoWindow {
				lostAcked = append(lostAcked, n)
			}
		}
	}
	for n, rows := range counts {
		if rows != batchSize {
			t.Errorf("batch %d is there in part: %d of %d rows", n, rows, batchSize)
		}
	}
	sort.Ints(lostAcked)
	t.Logf("acknowledged batches: %d; restored: %d; acknowledged but lost: %d (%d rows), the oldest acknowledged %v before the kill",
		len(acked), len(counts), lost, lost*batchSize, oldestLost.Round(time.Millisecond))
	is.Equal(lostAcked, []int{}) // acknowledged more than rpoWindow before the kill, yet lost
}

// TestPointInTimeRestore restores the replica as it was between two
// batches: exactly the earlier batch is there.
func TestPointInTimeRestore(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	srv, _, token := newReplicatedNode(t, s3, "pitr")
	c := srv.client(token)
	is.NoErr(c.insertBatch(1))
	time.Sleep(rpoWindow + time.Second)
	between := time.Now().UTC()
	time.Sleep(rpoWindow + time.Second)
	is.NoErr(c.insertBatch(2))
	srv.stop() // drain, close, final sync

	then, _ := restoreAndServe(t, s3, "pitr", between.Format(time.RFC3339Nano))
	is.Equal(then.client(token).batchCounts(), map[int]int{1: batchSize})
	now, _ := restoreAndServe(t, s3, "pitr", "")
	is.Equal(now.client(token).batchCounts(), map[int]int{1: batchSize, 2: batchSize})
}

// TestMoveProject moves a project from one node to another by the README's
// procedure: stop writes on the old node and let its replica catch up
// (stopping it gracefully ends with Litestream's final sync), restore on
// the new node, serve it there (replicating under the new node's prefix).
func TestMoveProject(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	old, oldDir, token := newReplicatedNode(t, s3, "node1")
	c := old.client(token)
	for n := 1; n <= 30; n++ {
		is.NoErr(c.insertBatch(n))
	}
	// 1. Writes stop (the proxy no longer routes acme to node1); 2. the
	// final sync: node1 stops gracefully, Litestream syncs on its way out.
	old.stop()

	// 3. Restore on node2, from node1's replica, and 4. serve it there.
	newDir := t.TempDir()
	runServerCmd(t, "project", "restore", "-data", newDir, "-litestream", tools.litestream, "-from", s3.dbURL("node1", "acme"), "acme")
	node2 := startServer(t, newDir, "-replica", s3.url("node2"))
	c2 := node2.client(token)
	want := map[int]int{}
	for n := 1; n <= 30; n++ {
		want[n] = batchSize
	}
	is.Equal(c2.batchCounts(), want) // every batch, the same token
	is.NoErr(c2.insertBatch(31))
	want[31] = batchSize

	// The old node's copy is the old one; node2 now replicates acme.
	store, err := projectdata.Open(oldDir, nil)
	is.NoErr(err)
	_, err = store.Authenticate(t.Context(), "acme", token)
	is.NoErr(err)
	is.NoErr(store.Close())
	node2.stop()
	again, _ := restoreAndServe(t, s3, "node2", "")
	is.Equal(again.client(token).batchCounts(), want)
}

// TestLitestreamIsRestartedWhenItDies kills the Litestream child: the
// server starts a new one and replication goes on.
func TestLitestreamIsRestartedWhenItDies(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	srv, _, token := newReplicatedNode(t, s3, "restart")
	c := srv.client(token)
	is.NoErr(c.insertBatch(1))
	pids := srv.litestreamPIDs()
	is.Equal(len(pids), 1)
	is.NoErr(syscall.Kill(pids[0], syscall.SIGKILL))
	waitFor(t, "a new litestream child", 20*time.Second, func() bool { return len(srv.litestreamPIDs()) == 2 })
	is.NoErr(c.insertBatch(2))
	srv.stop()
	restored, _ := restoreAndServe(t, s3, "restart", "")
	is.Equal(restored.client(token).batchCounts(), map[int]int{1: batchSize, 2: batchSize})
}

// TestMoveProjectWhileTheNodeServesOthers moves a project without stopping
// the old node: writes to it stop, `server project sync` waits until the
// replica holds every commit, the new node restores it; the old node goes
// on serving its other project all along.
func TestMoveProjectWhileTheNodeServesOthers(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	old, oldDir, token := newReplicatedNode(t, s3, "node1")
	other := runServerCmd(t, "project", "create", "-data", oldDir, "other")
	c := old.client(token)
	want := map[int]int{}
	for n := 1; n <= 30; n++ {
		is.NoErr(c.insertBatch(n))
		want[n] = batchSize
	}
	// Writes have stopped: the final sync, at once (Litestream would
	// upload them within its sync interval anyway; this waits for it).
	runServerCmd(t, "project", "sync", "-data", oldDir, "acme")

	newDir := t.TempDir()
	runServerCmd(t, "project", "restore", "-data", newDir, "-litestream", tools.litestream, "-from", s3.dbURL("node1", "acme"), "acme")
	node2 := startServer(t, newDir, "-replica", s3.url("node2"))
	is.Equal(node2.client(token).batchCounts(), want)

	var p struct {
		Project struct {
			Slug string `json:"project_slug"`
		} `json:"project"`
	}
	old.client(other).must("GET", "/projects/other", nil, &p) // the old node still serves
	is.Equal(p.Project.Slug, "other")
}

// TestFileReplica replicates to a file:// URL instead of S3 and restores
// from it, with no usable $TMPDIR: the replica is downloaded into the data
// folder. Restoring from the -replica URL itself, not a project's replica
// under it, says where replicas are: it got only Litestream's "no matching
// backup files available".
func TestFileReplica(t *testing.T) {
	is := is.New(t)
	replica := t.TempDir()
	dir := t.TempDir()
	token := runServerCmd(t, "project", "create", "-data", dir, "acme")
	srv := startServer(t, dir, "-replica", "file://"+replica)
	c := srv.client(token)
	c.createBatches()
	is.NoErr(c.insertBatch(1))
	is.NoErr(c.insertBatch(2))
	srv.stop() // drain, close, final sync

	restored := t.TempDir()
	cmd := exec.Command(tools.server, "project", "restore", "-data", restored, "-litestream", tools.litestream, "-from", "file://"+replica, "acme")
	cmd.Env = toolEnv()
	out, err := cmd.CombinedOutput()
	is.True(err != nil)
	is.True(strings.Contains(string(out), "no matching backup files"))                         // Litestream's words
	is.True(strings.Contains(string(out), "at the -replica URL followed by /SLUG/project.db")) // and where to look

	// Downloaded into the data folder: no $TMPDIR needed.
	cmd = exec.Command(tools.server, "project", "restore", "-data", restored, "-litestream", tools.litestream, "-from", "file://"+filepath.Join(replica, "acme", "project.db"), "acme")
	cmd.Env = append(toolEnv(), "TMPDIR=/nonexistent/tmp")
	out, err = cmd.CombinedOutput()
	is.True(err == nil) // the restore needs no $TMPDIR
	is.True(strings.Contains(string(out), "restored project acme"))
	is.Equal(integrityCheck(t, filepath.Join(restored, "acme", "project.db")), "ok")
	is.Equal(startServer(t, restored).client(token).batchCounts(), map[int]int{1: batchSize, 2: batchSize})
}

// TestProjectsCreatedWhileServingAreReplicated creates projects with the
// command line while a server replicates the folder: each one reaches the
// replica (`project sync` returns) and restores with its rows.
// A project created through a relative -data path was missed by
// Litestream's directory watcher, and `project sync` of it never returned.
func TestProjectsCreatedWhileServingAreReplicated(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	// As the README runs it: in the folder that holds the data folder.
	dir := t.TempDir()
	runServerCmd(t, "project", "create", "-data", dir, "acme")
	srv := startServerIn(t, filepath.Dir(dir), filepath.Base(dir), "-replica", s3.url("live"))
	for _, slug := range []string{"second", "third", "fourth"} {
		// As in the README: -data relative to the working folder.
		create := exec.Command(tools.server, "project", "create", "-data", filepath.Base(dir), slug)
		create.Dir, create.Env = filepath.Dir(dir), toolEnv()
		out, err := create.Output()
		is.NoErr(err)
		token := strings.TrimSpace(string(out))
		c := srv.client(token)
		c.project = slug
		c.createBatches()
		is.NoErr(c.insertBatch(1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err = exec.CommandContext(ctx, tools.server, "project", "sync", "-data", dir, slug).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("project sync %s: %v\n%s", slug, err, out)
		}
		restored := t.TempDir()
		runServerCmd(t, "project", "restore", "-data", restored, "-litestream", tools.litestream, "-from", s3.dbURL("live", slug), slug)
		rc := startServer(t, restored).client(token)
		rc.project = slug
		is.Equal(rc.batchCounts(), map[int]int{1: batchSize}) // slug
	}
}
