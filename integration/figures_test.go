//go:build unix

package integration

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// The figures of issue 13 (replication's cost, restore time of a large
// project, Litestream's resources with many projects) take minutes and a
// few GB of disk: they run only with PROJECTDATA_FIGURES=1, e.g.
//
//	cd integration && PROJECTDATA_FIGURES=1 go test -count=1 -v -timeout 30m -run Figure ./...
//
// They log figures; what they assert is only that the runs worked.
func needFigures(t *testing.T) {
	if os.Getenv("PROJECTDATA_FIGURES") == "" {
		t.Skip("a figure run: set PROJECTDATA_FIGURES=1")
	}
}

// TestFigureInsertThroughput measures inserts (batches of batchSize rows
// over HTTP, from 4 concurrent clients) on a server replicating with
// Litestream against one that does not, in the same run, rounds of each
// alternating.
func TestFigureInsertThroughput(t *testing.T) {
	needFigures(t)
	is := is.New(t)
	s3 := startS3(t)
	type node struct {
		name string
		srv  *serverProc
		tok  string
		rows int64
		took time.Duration
	}
	nodes := []*node{{name: "off"}, {name: "on"}}
	for _, n := range nodes {
		dir := t.TempDir()
		n.tok = runServerCmd(t, "project", "create", "-data", dir, "acme")
		var extra []string
		if n.name == "on" {
			extra = []string{"-replica", s3.url("throughput")}
		}
		n.srv = startServer(t, dir, extra...)
		n.srv.client(n.tok).createBatches()
	}
	const clients, round, rounds = 4, 3 * time.Second, 3
	var batch atomic.Int64
	for range rounds {
		for _, n := range nodes {
			var wg sync.WaitGroup
			var done atomic.Int64
			start := time.Now()
			for range clients {
				wg.Go(func() {
					c := n.srv.client(n.tok)
					for time.Since(start) < round {
						is.NoErr(c.insertBatch(int(batch.Add(1))))
						done.Add(1)
					}
				})
			}
			wg.Wait()
			n.took += time.Since(start)
			n.rows += done.Load() * batchSize
		}
	}
	off, on := nodes[0], nodes[1]
	rate := func(n *node) float64 { return float64(n.rows) / n.took.Seconds() }
	t.Logf("insert throughput, %d clients, batches of %d rows, %d rounds of %v each: replication off %.0f rows/s, on %.0f rows/s: on/off = %.2f",
		clients, batchSize, rounds, round, rate(off), rate(on), rate(on)/rate(off))
}

// TestFigureRestoreOneGigabyte replicates a project of about 1 GB, then
// times `server project restore` from the replica on a new folder, against
// a plain copy of the database file in the same run.
func TestFigureRestoreOneGigabyte(t *testing.T) {
	needFigures(t)
	is := is.New(t)
	s3 := startS3(t)
	dir := t.TempDir()
	token := runServerCmd(t, "project", "create", "-data", dir, "acme")
	srv := startServer(t, dir)
	srv.client(token).must("POST", "/projects/acme/table", map[string]any{
		"table_name": "blobs",
		"columns":    []map[string]any{{"column_name": "b", "column_type": "TEXT"}},
	}, nil)
	srv.stop()
	// Filled with SQL (the Store's inserts would take long): 100,000 rows of
	// 10 kB of random hex digits; the Store's row counts are not kept, which a
	// restore does not read.
	db := filepath.Join(dir, "acme", "project.db")
	raw, err := sqlite3.Open(db)
	is.NoErr(err)
	is.NoErr(raw.Exec(`INSERT INTO blobs (id, b) SELECT value, hex(randomblob(5000)) FROM generate_series(1, 100000)`))
	is.NoErr(raw.Close())
	info, err := os.Stat(db)
	is.NoErr(err)

	srv = startServer(t, dir, "-replica", s3.url("big"))
	replica := filepath.Join(s3.root, s3Bucket, "big")
	waitFor(t, "the replica of 1 GB", 15*time.Minute, func() bool {
		time.Sleep(time.Second)
		return folderSize(replica) >= info.Size()*9/10
	})
	srv.stop() // the final sync

	start := time.Now()
	is.NoErr(exec.Command("cp", db, filepath.Join(t.TempDir(), "copy.db")).Run())
	copyTook := time.Since(start)

	restored := t.TempDir()
	start = time.Now()
	runServerCmd(t, "project", "restore", "-data", restored, "-litestream", tools.litestream, "-from", s3.dbURL("big", "acme"), "acme")
	took := time.Since(start)
	is.Equal(integrityCheck(t, filepath.Join(restored, "acme", "project.db")), "ok")
	t.Logf("restore of a %.2f GB project from its S3 replica (versitygw on this disk): %v, integrity_check and the move into place included; a plain cp of the file: %v: ratio %.1f",
		float64(info.Size())/1e9, took.Round(time.Millisecond), copyTook.Round(time.Millisecond), took.Seconds()/copyTook.Seconds())
}

// TestFigureLitestreamWith500Projects serves 500 projects with -replica
// and reads the Litestream child's resident memory and open file
// descriptors once every project is on the replica.
func TestFigureLitestreamWith500Projects(t *testing.T) {
	needFigures(t)
	is := is.New(t)
	s3 := startS3(t)
	dir := t.TempDir()
	const projects = 500
	store, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	for i := range projects {
		_, _, err := store.CreateProject(context.Background(), fmt.Sprintf("p%03d", i), "")
		is.NoErr(err)
	}
	is.NoErr(store.Close())
	srv := startServer(t, dir, "-replica", s3.url("many"))
	replica := filepath.Join(s3.root, s3Bucket, "many")
	start := time.Now()
	waitFor(t, "every project on the replica", 10*time.Minute, func() bool {
		time.Sleep(time.Second)
		entries, _ := os.ReadDir(replica)
		return len(entries) >= projects
	})
	synced := time.Since(start)
	time.Sleep(5 * time.Second) // a few idle sync rounds
	pids := srv.litestreamPIDs()
	is.Equal(len(pids), 1)
	rss := procStatus(t, pids[0], "VmRSS")
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pids[0]))
	is.NoErr(err)
	t.Logf("Litestream with %d projects: every one on the replica after %v; resident memory %s, %d open file descriptors",
		projects, synced.Round(time.Second), rss, len(fds))
	srv.stop()
}

// folderSize is the bytes of the files under dir.
func folderSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// procStatus returns a field of /proc/PID/status.
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if name, value, ok := strings.Cut(line, ":"); ok && name == field {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return "?"
}
