package projectdata_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestSnapshotUnderMixedLoad takes snapshots while idempotent inserts,
// bulk updates, deletes and schema changes run and the checkpointer copies
// the log: each snapshot is sound, its kept row counts are its COUNT(*),
// every idempotency answer it holds has its effect in it and every effect
// its answer, every write acknowledged before the snapshot began is in it,
// and it restores into a project that serves reads and writes.
func TestSnapshotUnderMixedLoad(t *testing.T) {
	is := is.New(t)
	// What is tested is not time: under load (-race, a slow machine) a
	// write may wait for the writer past the default QueueTimeout.
	s, dir := pdtest.Open(t, &projectdata.Options{QueueTimeout: time.Minute, WriteTimeout: time.Minute})
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "k"}, {Name: "n", Type: projectdata.TypeInteger}, {Name: "u", Type: projectdata.TypeInteger},
	}})
	is.NoErr(err)

	var (
		mu    sync.Mutex
		acked []string // insert keys acknowledged, in order
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make(chan error, 3)
	)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	wg.Go(func() { // idempotent inserts of 5 rows, each batch tagged with its key
		for i := 0; !stopped(); i++ {
			key := fmt.Sprintf("k%06d", i)
			rows := make([]projectdata.Row, 5)
			for j := range rows {
				rows[j] = projectdata.Row{"k": key, "n": i}
			}
			if _, err := s.Insert(projectdata.WithIdempotencyKey(ctx, key), "acme", "items", rows); err != nil {
				errs <- fmt.Errorf("insert %s: %w", key, err)
				return
			}
			mu.Lock()
			acked = append(acked, key)
			mu.Unlock()
		}
	})
	wg.Go(func() { // bulk updates and deletes, idempotent
		next := 0 // the next batch to delete, one of three, once acknowledged
		for i := 0; !stopped(); i++ {
			mu.Lock()
			del := next < len(acked)
			mu.Unlock()
			var err error
			if i%4 == 3 && del {
				_, err = s.DeleteRecords(projectdata.WithIdempotencyKey(ctx, fmt.Sprintf("d%06d", next)), "acme", "items",
					projectdata.BulkDelete{Where: projectdata.Where{{Column: "n", Op: projectdata.WhereEq, Value: next}}})
				next += 3
			} else {
				_, err = s.UpdateRecords(projectdata.WithIdempotencyKey(ctx, fmt.Sprintf("u%06d", i)), "acme", "items",
					projectdata.BulkUpdate{Data: projectdata.Row{"u": i}, AllowAll: true})
			}
			if err != nil {
				errs <- fmt.Errorf("bulk %d: %w", i, err)
				return
			}
		}
	})
	wg.Go(func() { // schema changes
		for i := 0; !stopped(); i++ {
			col := fmt.Sprintf("c%d", i)
			if _, err := s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: col, Default: i}); err != nil {
				errs <- fmt.Errorf("add column: %w", err)
				return
			}
			ix, err := s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{col}})
			if err != nil {
				errs <- fmt.Errorf("create index: %w", err)
				return
			}
			if i%2 == 0 {
				if _, err := s.DropIndex(ctx, "acme", "items", ix.Name); err != nil {
					errs <- fmt.Errorf("drop index: %w", err)
					return
				}
			}
			tb := fmt.Sprintf("t%d", i)
			if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: tb, Columns: []projectdata.ColumnDef{{Name: "x"}}}); err != nil {
				errs <- fmt.Errorf("create table: %w", err)
				return
			}
			if _, err := s.Insert(ctx, "acme", tb, []projectdata.Row{{"x": "a"}, {"x": "b"}}); err != nil {
				errs <- fmt.Errorf("insert: %w", err)
				return
			}
			if i%3 != 0 {
				if _, err := s.DeleteTable(ctx, "acme", tb); err != nil {
					errs <- fmt.Errorf("delete table: %w", err)
					return
				}
			}
		}
	})

	snapshots := 8
	if testing.Short() || raceEnabled {
		snapshots = 4
	}
	type snap struct {
		path   string
		before []string
		e      projectdata.Export
	}
	var snaps []snap
	for range snapshots {
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n > 40*(len(snaps)+1) {
				break
			}
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		before := slices.Clone(acked)
		mu.Unlock()
		e, err := s.CreateProjectExport(ctx, "acme")
		is.NoErr(err)
		_, f, err := s.OpenExport(ctx, "acme", e.ID)
		is.NoErr(err)
		f.Close()
		snaps = append(snaps, snap{f.Name(), before, e})
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	for i, sn := range snaps {
		// A copy of the snapshot as a project folder of its own, to read
		// it as the Store would.
		copyDir := t.TempDir()
		is.NoErr(os.Mkdir(filepath.Join(copyDir, "snap"), 0o755))
		is.NoErr(os.WriteFile(filepath.Join(copyDir, "snap", "project.db"), readFile(t, sn.path), 0o644))
		raw := pdtest.Raw(t, copyDir, "snap")
		is.Equal(rawText(t, raw, `PRAGMA integrity_check`), "ok")
		pdtest.CheckRowCounts(t, copyDir, "snap")

		var rows int64
		for _, name := range rawStrings(t, raw, `SELECT name FROM _pd_tables`) {
			rows += int64(rawCount(t, raw, `SELECT count(*) FROM `+sqlite3.QuoteIdentifier(name)))
		}
		is.Equal(rows, sn.e.RowCount)

		// Answers and effects agree.
		answered := map[string]bool{}
		for _, k := range rawStrings(t, raw, `SELECT key FROM _pd_idempotency WHERE key LIKE 'k%'`) {
			answered[k] = true
		}
		deleted := map[string]bool{} // insert keys whose batch an answered delete removed (d000003 removes k000003's)
		for _, k := range rawStrings(t, raw, `SELECT key FROM _pd_idempotency WHERE key LIKE 'd%'`) {
			deleted["k"+k[1:]] = true
		}
		present := map[string]int{}
		for _, k := range rawStrings(t, raw, `SELECT k FROM items`) {
			present[k]++
		}
		for k := range present {
			if !answered[k] {
				t.Fatalf("snapshot %d: rows of %s without its answer", i, k)
			}
			if present[k] != 5 {
				t.Fatalf("snapshot %d: %d rows of %s", i, present[k], k)
			}
			if deleted[k] {
				t.Fatalf("snapshot %d: rows of %s that an answered delete removed", i, k)
			}
		}
		for k := range answered {
			if present[k] == 0 && !deleted[k] {
				t.Fatalf("snapshot %d: answer of %s without its rows", i, k)
			}
		}
		for _, k := range sn.before {
			if !answered[k] {
				t.Fatalf("snapshot %d: %s, acknowledged before it began, is missing", i, k)
			}
		}
		if u := rawCount(t, raw, `SELECT coalesce(max(cast(substr(key, 2) AS INTEGER)), -1) FROM _pd_idempotency WHERE key LIKE 'u%'`); u >= 0 {
			is.True(rawCount(t, raw, `SELECT count(*) FROM items WHERE u > `+fmt.Sprint(u)) == 0) // no update without its answer
		}

		t.Logf("snapshot %d: %d rows, %d tables, %d answers", i, sn.e.RowCount, *sn.e.TableCount, len(answered))
		// It restores into a project that serves.
		slug := fmt.Sprintf("copy%d", i)
		_, err := s.RestoreProject(ctx, slug, sn.path)
		is.NoErr(err)
		pdtest.CheckRowCounts(t, dir, slug)
		tables, err := s.ListTables(ctx, slug)
		is.NoErr(err)
		for _, tb := range tables {
			_, err := s.ListRecords(ctx, slug, tb.Name, projectdata.ListOptions{})
			is.NoErr(err)
			_, _, err = s.ListIndexes(ctx, slug, tb.Name)
			is.NoErr(err)
		}
		_, err = s.Insert(projectdata.WithIdempotencyKey(ctx, "after-restore"), slug, "items", []projectdata.Row{{"k": "new"}})
		is.NoErr(err)
		_, err = s.AddColumn(ctx, slug, "items", projectdata.ColumnDef{Name: "restored"})
		is.NoErr(err)
		_, err = s.Query(ctx, slug, projectdata.QueryRequest{SQL: `SELECT count(*) FROM items`})
		is.NoErr(err)
		last, err := s.LastChangeID(ctx, slug)
		is.NoErr(err)
		_, err = s.ListChanges(ctx, slug, projectdata.ChangeQuery{After: last - 3}) // the restart and the two writes above
		is.NoErr(err)
		_, err = s.ListExports(ctx, slug, projectdata.ExportQuery{})
		is.NoErr(err)
		_, err = s.CreateProjectExport(ctx, slug)
		is.NoErr(err)
		pdtest.CheckRowCounts(t, dir, slug)
	}
}

// rawStrings returns the first column of every row of a query, as text.
func rawStrings(t *testing.T, c *sqlite3.Conn, sql string) []string {
	t.Helper()
	st, _, err := c.Prepare(sql)
	if err != nil {
		t.Fatalf("prepare %.60q: %v", sql, err)
	}
	defer st.Close()
	var out []string
	for st.Step() {
		out = append(out, st.ColumnText(0))
	}
	if err := st.Err(); err != nil {
		t.Fatalf("query %.60q: %v", sql, err)
	}
	return out
}

// TestSnapshotSizes: a snapshot of a project without tables, of tables
// without rows, and of many tables with indexes, restores whole.
func TestSnapshotSizes(t *testing.T) {
	for _, tables := range []int{0, 1, 120} {
		t.Run(fmt.Sprint(tables, "Tables"), func(t *testing.T) {
			is := is.New(t)
			s, _ := pdtest.NewProject(t, nil)
			for i := range tables {
				name := fmt.Sprintf("t%d", i)
				_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: name, Columns: []projectdata.ColumnDef{
					{Name: "a", Unique: true}, {Name: "b", Type: projectdata.TypeInteger}, {Name: "c"},
				}})
				is.NoErr(err)
				_, err = s.CreateIndex(ctx, "acme", name, projectdata.IndexRequest{Columns: []string{"b", "c"}})
				is.NoErr(err)
				if i%2 == 1 {
					_, err = s.Insert(ctx, "acme", name, []projectdata.Row{{"a": "x", "b": i}})
					is.NoErr(err)
				}
			}
			e, err := s.CreateProjectExport(ctx, "acme")
			is.NoErr(err)
			is.Equal(*e.TableCount, int64(tables))
			is.Equal(e.RowCount, int64(tables/2))
			_, f, err := s.OpenExport(ctx, "acme", e.ID)
			is.NoErr(err)
			f.Close()
			dst, dstDir := pdtest.Open(t, nil)
			_, err = dst.RestoreProject(ctx, "copy", f.Name())
			is.NoErr(err)
			got, err := dst.ListTables(ctx, "copy")
			is.NoErr(err)
			is.Equal(len(got), tables)
			pdtest.CheckRowCounts(t, dstDir, "copy")
			for _, tb := range got {
				_, ix, err := dst.ListIndexes(ctx, "copy", tb.Name)
				is.NoErr(err)
				is.True(len(ix) >= 1)
			}
		})
	}
}
