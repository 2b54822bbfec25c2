package projectdata_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// notesSize is the size of an export of the fixture's notes table.
var notesSize = int64(len(notesCSV))

// readyExports returns the project's ready manifests and their bytes.
func (f exportFixture) readyExports(t *testing.T) ([]projectdata.Export, int64) {
	t.Helper()
	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: projectdata.ExportStatusReady, Limit: projectdata.MaxExportLimit})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range page.Exports {
		sum += e.SizeBytes
	}
	return page.Exports, sum
}

// exportFiles returns the names of the exports' files, as in the folder.
func exportFiles(exports []projectdata.Export) []string {
	names := []string{}
	for _, e := range exports {
		names = append(names, e.ID+".csv")
	}
	return names
}

func sameNames(a, b []string) bool {
	a, b = append([]string{}, a...), append([]string{}, b...)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestExportQuota(t *testing.T) {
	t.Run("ExportPastTheQuotaLeavesNoFileNorManifest", func(t *testing.T) {
		is := is.New(t)
		max := 2*notesSize + notesSize/2 // two exports fit, not three
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: max})
		kept := []projectdata.Export{f.export(t), f.export(t)}
		_, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		is.True(strings.Contains(err.Error(), strconv.FormatInt(max, 10)+" bytes allowed"))
		is.True(strings.Contains(err.Error(), "they hold "+strconv.FormatInt(2*notesSize, 10)+" bytes"))
		is.True(sameNames(f.exportsDir(t), exportFiles(kept))) // no third file, no temporary one
		ready, sum := f.readyExports(t)
		is.Equal(exportIDs(ready), exportIDs([]projectdata.Export{kept[1], kept[0]}))
		is.Equal(sum, 2*notesSize)
	})

	t.Run("AtTheQuotaRefusedBeforeReading", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: 2 * notesSize})
		f.export(t)
		f.export(t) // exactly at the bound
		// Refused before the table is looked up: no table_not_found.
		_, err := f.s.CreateExport(ctx, "acme", "no_such_table", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		is.True(strings.Contains(err.Error(), "hold "+strconv.FormatInt(2*notesSize, 10)+" bytes of the "+strconv.FormatInt(2*notesSize, 10)+" allowed"))
		is.Equal(len(f.exportsDir(t)), 2)
	})

	t.Run("ExpiryFreesRoom", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: 2 * notesSize})
		f.export(t)
		f.export(t)
		_, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		f.clock.Advance(exportWeek)
		e := f.export(t)
		is.Equal(f.exportsDir(t), []string{e.ID + ".csv"}) // the expired files are gone from the disk
		_, sum := f.readyExports(t)
		is.Equal(sum, notesSize)
	})

	t.Run("RemovedFileFreesRoom", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: 2 * notesSize})
		first := f.export(t)
		f.export(t)
		_, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		is.NoErr(os.Remove(f.file(first.ID)))
		f.export(t)
		n, err := f.s.DeleteNotFoundExports(ctx, "acme") // the admin forgets the removed one
		is.NoErr(err)
		is.Equal(n, 1)
	})

	t.Run("TableLargerThanTheQuotaStopsMidway", func(t *testing.T) {
		is := is.New(t)
		const max = 100 << 10
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: max})
		_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "big", Columns: []projectdata.ColumnDef{{Name: "body"}}})
		is.NoErr(err)
		// About 500 KiB of CSV: five times the bound.
		pdtest.Exec(t, f.raw, `INSERT INTO big (body) SELECT hex(randomblob(50)) FROM generate_series(1, 5000)`)
		_, err = f.s.CreateExport(ctx, "acme", "big", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		// It stopped at the first buffer (64 KiB) past the bound, not
		// after writing the table.
		m := regexp.MustCompile(`stopped at (\d+) bytes`).FindStringSubmatch(err.Error())
		is.True(m != nil)
		stopped, _ := strconv.Atoi(m[1])
		is.True(stopped > max && stopped <= max+64<<10)
		is.Equal(f.exportsDir(t), []string{}) // the temporary file is removed
		ready, _ := f.readyExports(t)
		is.Equal(len(ready), 0)
		f.export(t) // the stopped export's bytes are free again
	})

	t.Run("ConcurrentExportsCannotPassItTogether", func(t *testing.T) {
		is := is.New(t)
		max := notesSize + notesSize/2 // one export fits, not two
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: max, MaxExportsPerProject: 2})
		for round := range 20 {
			var (
				wg              sync.WaitGroup
				start           = make(chan struct{})
				mu              sync.Mutex
				made, refused   int
				unexpectedError error
			)
			for range 2 {
				wg.Go(func() {
					<-start
					_, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
					mu.Lock()
					defer mu.Unlock()
					switch projectdata.ErrorCode(err) {
					case "":
						made++
					case projectdata.ErrExportQuotaExceeded:
						refused++
					default:
						unexpectedError = err
					}
				})
			}
			close(start)
			wg.Wait()
			is.NoErr(unexpectedError)
			ready, sum := f.readyExports(t)
			if made != 1 || refused != 1 || sum > max || len(ready) != 1 {
				t.Fatalf("round %d: %d made, %d refused, %d ready exports of %d bytes (max %d)", round, made, refused, len(ready), sum, max)
			}
			is.True(sameNames(f.exportsDir(t), exportFiles(ready)))
			f.clock.Advance(exportWeek) // the next round starts with the room free
		}
	})

	t.Run("IdempotentRefusalIsNotStored", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: notesSize})
		first := f.export(t)
		idem := projectdata.WithIdempotencyKey(ctx, "export-1")
		_, err := f.s.CreateExport(idem, "acme", "notes", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		// Room frees within the key's lifetime (not by expiry: a week
		// is past Options.IdempotencyTTL, which would forget any answer).
		is.NoErr(os.Remove(f.file(first.ID)))
		// The retry under the same key runs again, and passes now.
		e, err := f.s.CreateExport(idem, "acme", "notes", "csv")
		is.NoErr(err)
		again, err := f.s.CreateExport(idem, "acme", "notes", "csv") // its success is stored
		is.NoErr(err)
		is.Equal(again.ID, e.ID)
	})
}

func TestProjectExportQuota(t *testing.T) {
	t.Run("SnapshotPastTheQuotaWritesNothing", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{MaxExportBytes: 4096}) // less than the database
		_, err := f.s.CreateProjectExport(ctx, "acme")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		is.Equal(f.exportsDir(t), []string{}) // no file, no temporary one, no journal
		ready, _ := f.readyExports(t)
		is.Equal(len(ready), 0)
	})

	t.Run("SnapshotsCountAgainstTheQuota", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		snap, err := f.s.CreateProjectExport(ctx, "acme")
		is.NoErr(err)
		is.NoErr(f.s.Close())

		// The same folder, with room for the snapshot and half a CSV export.
		max := snap.SizeBytes + notesSize/2
		s, err := projectdata.Open(f.dir, &projectdata.Options{MaxExportBytes: max, Now: f.clock.Now})
		is.NoErr(err)
		t.Cleanup(func() { s.Close() })
		_, err = s.CreateExport(ctx, "acme", "notes", "csv")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		is.True(strings.Contains(err.Error(), "they hold "+strconv.FormatInt(snap.SizeBytes, 10)+" bytes"))
		_, err = s.CreateProjectExport(ctx, "acme")
		pdtest.Code(t, err, projectdata.ErrExportQuotaExceeded)
		entries, err := os.ReadDir(filepath.Join(f.dir, "acme", "exports"))
		is.NoErr(err)
		is.Equal(len(entries), 1) // the first snapshot only
	})
}
