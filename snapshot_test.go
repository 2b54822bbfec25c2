package projectdata_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// snapshotFile is the path of a project export's file.
func snapshotFile(dir, slug, id string) string {
	return filepath.Join(dir, slug, "exports", id+".sqlite")
}

// openSnapshot opens a snapshot file read-only (immutable: it never
// changes, and no -shm is made beside it).
func openSnapshot(t *testing.T, path string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.OpenFlags("file:"+path+"?immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		t.Fatalf("open snapshot: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCreateProjectExport(t *testing.T) {
	t.Run("ManifestDescribesTheFile", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e, err := f.s.CreateProjectExport(ctx, "acme")
		is.NoErr(err)
		size, sum := fileDigest(t, snapshotFile(f.dir, "acme", e.ID))
		is.Equal(e, projectdata.Export{
			ID: e.ID, Kind: "project_export", Scope: "project", Project: "acme", Table: nil, Format: "sqlite",
			DownloadName: "acme-20261121T140509Z.sqlite", DownloadURL: "/projects/acme/export/download/" + e.ID,
			StorageBackend: "local", ContentType: "application/vnd.sqlite3",
			RowCount: 10, TableCount: ptr(int64(1)), SizeBytes: size, SHA256: sum,
			Status: "ready", CreatedAt: projectdata.Timestamp{Time: exportEpoch}, ExpiresAt: projectdata.Timestamp{Time: exportEpoch.Add(exportWeek)},
		})
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(page.Exports, []projectdata.Export{e})       // as stored
		is.Equal(f.exportsDir(t), []string{e.ID + ".sqlite"}) // no temporary file

		js, err := json.Marshal(e)
		is.NoErr(err)
		var fields map[string]any
		is.NoErr(json.Unmarshal(js, &fields))
		v, ok := fields["table"]
		is.True(ok)
		is.Equal(v, nil) // "table": null
	})
	t.Run("FileIsTheWholeProject", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e, err := f.s.CreateProjectExport(ctx, "acme")
		is.NoErr(err)
		snap := openSnapshot(t, snapshotFile(f.dir, "acme", e.ID))
		is.Equal(rawText(t, snap, `PRAGMA integrity_check`), "ok")
		is.Equal(rawText(t, snap, `SELECT group_concat(id || ':' || quote(body), ';') FROM (SELECT * FROM notes ORDER BY id)`),
			rawText(t, f.raw, `SELECT group_concat(id || ':' || quote(body), ';') FROM (SELECT * FROM notes ORDER BY id)`))
		is.Equal(rawCount(t, snap, `SELECT count(*) FROM _pd_tokens`), 1)
		is.Equal(rawCount(t, snap, `SELECT count(*) FROM _pd_tables`), 1)
	})
	t.Run("NeedsAdmin", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		_, err := f.s.CreateProjectExport(pdtest.As(t, f.s, projectdata.RoleWrite), "acme")
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		e, err := f.s.CreateProjectExport(pdtest.As(t, f.s, projectdata.RoleAdmin), "acme")
		is.NoErr(err)
		for _, role := range []projectdata.Role{projectdata.RoleRead, projectdata.RoleWrite} {
			_, file, err := f.s.OpenExport(pdtest.As(t, f.s, role), "acme", e.ID)
			pdtest.Code(t, err, projectdata.ErrPermissionDenied)
			is.True(file == nil)
		}
		_, file, err := f.s.OpenExport(pdtest.As(t, f.s, projectdata.RoleAdmin), "acme", e.ID)
		is.NoErr(err)
		file.Close()
		// A table export still downloads with the read role.
		te := f.export(t)
		_, file, err = f.s.OpenExport(pdtest.As(t, f.s, projectdata.RoleRead), "acme", te.ID)
		is.NoErr(err)
		file.Close()
	})
}

// TestProjectExportUnderConcurrentInserts takes a snapshot of a large
// project while the Store keeps inserting batches of 10 rows with the next
// ids: the file must hold exactly the batches committed at one instant
// (ids 1..N, N a whole number of batches, between what was committed when
// the snapshot began and when it ended), inserts must commit while it is
// taken, and none may wait 100 ms or more.
func TestProjectExportUnderConcurrentInserts(t *testing.T) {
	is := is.New(t)
	initial := 200_000 // about 40 MB
	if testing.Short() || raceEnabled {
		initial = 50_000
	}
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "seq", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), fmt.Sprintf(`INSERT INTO seq (id, v) SELECT value, hex(randomblob(100)) FROM generate_series(1, %d)`, initial))

	var (
		committed atomic.Int64 // rows committed by the inserter
		snapping  atomic.Bool  // the snapshot is being taken
		during    atomic.Int64 // inserts that began and ended while it was
		slowest   atomic.Int64 // longest insert while it was, in ns
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		werr      error
	)
	committed.Store(int64(initial))
	wg.Go(func() {
		next := int64(initial + 1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rows := make([]projectdata.Row, 10)
			for i := range rows {
				rows[i] = projectdata.Row{"id": next + int64(i), "v": "x"}
			}
			began, start := snapping.Load(), time.Now()
			_, werr = s.Insert(ctx, "acme", "seq", rows)
			took := time.Since(start)
			if werr != nil {
				return
			}
			if began && snapping.Load() {
				during.Add(1)
				if int64(took) > slowest.Load() {
					slowest.Store(int64(took))
				}
			}
			next += 10
			committed.Store(next - 1)
		}
	})
	for committed.Load() < int64(initial+100) {
		time.Sleep(time.Millisecond)
	}
	before := committed.Load()
	snapping.Store(true)
	start := time.Now()
	e, err := s.CreateProjectExport(ctx, "acme")
	took := time.Since(start)
	snapping.Store(false)
	after := committed.Load()
	close(stop)
	wg.Wait()
	is.NoErr(err)
	is.NoErr(werr)

	snap := openSnapshot(t, snapshotFile(dir, "acme", e.ID))
	n := int64(rawCount(t, snap, `SELECT count(*) FROM seq`))
	is.Equal(n, e.RowCount)
	is.Equal(int64(rawCount(t, snap, `SELECT max(id) FROM seq`)), n) // ids 1..N: no gap
	is.Equal((n-int64(initial))%10, int64(0))                        // no batch half there
	is.True(n >= before)                                             // every batch committed before it began
	is.True(n <= after)                                              // none committed after it ended
	is.Equal(rawText(t, snap, `PRAGMA integrity_check`), "ok")
	t.Logf("snapshot of %d rows (%d bytes) took %v; %d inserts ran during it, the slowest %v",
		n, e.SizeBytes, took, during.Load(), time.Duration(slowest.Load()))
	is.True(during.Load() > 0) // writes went on while it was taken
	// A timed check only in the long run: the quick one shares its cores
	// with the rest of CI, and logs the figure above.
	if !testing.Short() && !raceEnabled {
		is.True(time.Duration(slowest.Load()) < 100*time.Millisecond) // no insert waited for it
	}
}

// fileDigest returns a file's size and SHA-256 in hex.
func fileDigest(t *testing.T, path string) (int64, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return int64(len(b)), hex.EncodeToString(sum[:])
}

// rawText returns the first column of the first row of a query, as text.
func rawText(t *testing.T, c *sqlite3.Conn, sql string) string {
	t.Helper()
	st, _, err := c.Prepare(sql)
	if err != nil {
		t.Fatalf("prepare %.60q: %v", sql, err)
	}
	defer st.Close()
	if !st.Step() {
		t.Fatalf("no row from %.60q: %v", sql, st.Err())
	}
	return st.ColumnText(0)
}

// TestProjectExportStopsWhenItsContextEnds cancels a snapshot of a large
// project as soon as its temporary file holds data: the snapshot stops
// there, its file never grows to the database's size, and it returns the
// context's error, leaving no file and no manifest. The project's other
// operations go on.
func TestProjectExportStopsWhenItsContextEnds(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "seq", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	const rows, rowBytes = 12_000, 4000 // about 48 MB
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), fmt.Sprintf(`INSERT INTO seq (id, v) SELECT value, hex(randomblob(%d)) FROM generate_series(1, %d)`, rowBytes/2, rows))
	exports := filepath.Join(dir, "acme", "exports")

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var largest atomic.Int64 // the largest size of a file in exports/ seen
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			names, _ := os.ReadDir(exports)
			for _, n := range names {
				if info, err := n.Info(); err == nil && info.Size() > 0 {
					cancel()
					largest.Store(max(largest.Load(), info.Size()))
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	_, err = s.CreateProjectExport(cctx, "acme")
	close(stop)
	wg.Wait()
	is.True(errors.Is(err, context.Canceled))        // the context's error
	is.True(largest.Load() > 0)                      // the copy had begun
	is.True(largest.Load() < int64(rows*rowBytes)/2) // and stopped well before its end
	left, err := os.ReadDir(exports)
	is.NoErr(err)
	is.Equal(len(left), 0) // no file, temporary or journal
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(page.Total, 0) // no manifest
	_, err = s.CreateProjectExport(ctx, "acme")
	is.NoErr(err) // later snapshots work
}
