package projectdata_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestRegistryIsCurrentAcrossStores shows that a Store sees the schema
// changes another Store on the same folder commits, at once: each
// connection checks the registry version in its own snapshot before it
// trusts its cached registry.
func TestRegistryIsCurrentAcrossStores(t *testing.T) {
	is := is.New(t)
	a, dir := pdtest.Open(t, nil)
	b, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer b.Close()
	_, _, err = a.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = a.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t1", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)

	// B caches the registry on its readers and on its writer.
	_, err = b.Insert(ctx, "acme", "t1", []projectdata.Row{{"qty": 1}})
	is.NoErr(err)
	_, err = b.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT qty FROM t1"})
	is.NoErr(err)
	_, err = b.GetTable(ctx, "acme", "t1")
	is.NoErr(err)

	// A changes the schema, and the registry alone (a display name).
	_, _, err = a.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t2"})
	is.NoErr(err)
	_, err = a.AddColumn(ctx, "acme", "t1", projectdata.ColumnDef{Name: "note"})
	is.NoErr(err)
	shown := "Orders"
	_, err = a.UpdateTable(ctx, "acme", "t1", projectdata.TableUpdate{DisplayName: projectdata.SetTo(&shown)})
	is.NoErr(err)

	t.Run("NewTableIsFound", func(t *testing.T) {
		is := is.New(t)
		_, err := b.GetTable(ctx, "acme", "t2")
		is.NoErr(err)
	})
	t.Run("NewColumnIsWritable", func(t *testing.T) {
		is := is.New(t)
		_, err := b.Insert(ctx, "acme", "t1", []projectdata.Row{{"qty": 2, "note": "x"}})
		is.NoErr(err)
	})
	t.Run("NewTableIsQueryable", func(t *testing.T) {
		is := is.New(t)
		_, err := b.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT * FROM t2"})
		is.NoErr(err)
	})
	t.Run("NewColumnIsListed", func(t *testing.T) {
		is := is.New(t)
		_, cols, err := b.ListColumns(ctx, "acme", "t1")
		is.NoErr(err)
		is.Equal(len(cols), 3) // id, qty, note
	})
	t.Run("RegistryOnlyChangeIsSeen", func(t *testing.T) {
		is := is.New(t)
		tbl, err := b.GetTable(ctx, "acme", "t1")
		is.NoErr(err)
		is.True(tbl.DisplayName != nil && *tbl.DisplayName == "Orders")
	})
	t.Run("DeletedTableIsGone", func(t *testing.T) {
		is := is.New(t)
		_, err := b.GetTable(ctx, "acme", "t2") // cached with t2
		is.NoErr(err)
		_, err = a.DeleteTable(ctx, "acme", "t2")
		is.NoErr(err)
		_, err = b.GetTable(ctx, "acme", "t2")
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
		_, err = b.Insert(ctx, "acme", "t2", []projectdata.Row{{}})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
}

// TestRecordReadsSeeOtherStoresSchemaChanges shows that a read by key,
// which reads the registry version in the row's own statement, answers
// with the schema another Store on the same folder committed just before,
// with nothing else of the reading Store in between to refresh its cache.
func TestRecordReadsSeeOtherStoresSchemaChanges(t *testing.T) {
	is := is.New(t)
	a, dir := pdtest.Open(t, nil)
	b, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer b.Close()
	_, _, err = a.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = a.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t1", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)
	_, err = a.Insert(ctx, "acme", "t1", []projectdata.Row{{"qty": 1}})
	is.NoErr(err)
	read := func() (projectdata.Row, string, error) {
		row, err := b.GetRecord(ctx, "acme", "t1", 1)
		if err != nil {
			return nil, "", err
		}
		raw, err := b.AppendRecordJSON(ctx, nil, "acme", "t1", 1)
		return row, string(raw), err
	}
	_, _, err = read() // B caches the registry
	is.NoErr(err)

	t.Run("NewColumn", func(t *testing.T) {
		is := is.New(t)
		_, err := a.AddColumn(ctx, "acme", "t1", projectdata.ColumnDef{Name: "note"})
		is.NoErr(err)
		row, raw, err := read()
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": int64(1), "qty": int64(1), "note": nil})
		is.Equal(raw, `{"table":"t1","row":{"id":1,"note":null,"qty":1}}`)
	})
	t.Run("RenamedColumn", func(t *testing.T) {
		is := is.New(t)
		_, err := a.UpdateColumn(ctx, "acme", "t1", "note", projectdata.ColumnUpdate{Name: projectdata.SetTo("memo")})
		is.NoErr(err)
		row, _, err := read()
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": int64(1), "qty": int64(1), "memo": nil})
	})
	t.Run("NewTable", func(t *testing.T) {
		is := is.New(t)
		_, _, err := a.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t2"})
		is.NoErr(err)
		_, err = a.Insert(ctx, "acme", "t2", []projectdata.Row{{}})
		is.NoErr(err)
		_, err = b.GetRecord(ctx, "acme", "t2", 1)
		is.NoErr(err)
	})
	t.Run("DeletedTable", func(t *testing.T) {
		is := is.New(t)
		_, err := a.DeleteTable(ctx, "acme", "t2")
		is.NoErr(err)
		_, err = b.GetRecord(ctx, "acme", "t2", 1)
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
}

// TestRegistryLoadsFromOneSnapshot churns a table (created, deleted, again)
// while other goroutines read it: every registry load reads one snapshot,
// so no read fails with an internal error, whatever the interleaving.
func TestRegistryLoadsFromOneSnapshot(t *testing.T) {
	cycles := 2000
	if testing.Short() {
		cycles = 300
	}
	is := is.New(t)
	s, _ := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	done := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		internal []error
	)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				_, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT count(*) FROM churn"})
				if err == nil {
					_, _, err = s.ListColumns(ctx, "acme", "churn")
				}
				if err == nil {
					_, err = s.GetRecord(ctx, "acme", "churn", 1)
				}
				if projectdata.ErrorCode(err) == projectdata.ErrInternal {
					mu.Lock()
					internal = append(internal, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range cycles {
		cols := []projectdata.ColumnDef{{Name: fmt.Sprintf("c%d", i)}, {Name: "v", Type: "INTEGER"}}
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "churn", Columns: cols})
		is.NoErr(err)
		_, err = s.DeleteTable(ctx, "acme", "churn")
		is.NoErr(err)
	}
	close(done)
	wg.Wait()
	is.Equal(internal, nil) // no read failed with an internal error
}

// TestOpeningAProjectLockedByAnotherProcessIsBusy: a process that keeps
// the project's database locked (SQLite's exclusive locking mode) past
// Options.BusyTimeout makes opening the project, and so every operation
// on it, 503 server_busy, not internal_error; once it lets go, the same
// Store serves the project.
func TestOpeningAProjectLockedByAnotherProcessIsBusy(t *testing.T) {
	is := is.New(t)
	opts := &projectdata.Options{BusyTimeout: 10 * time.Millisecond}
	s, dir := pdtest.Open(t, opts)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)
	is.NoErr(s.Close())

	other := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, other, `PRAGMA locking_mode=EXCLUSIVE`)
	pdtest.Exec(t, other, `INSERT INTO t (qty) VALUES (1)`) // takes the exclusive lock and keeps it
	s, err = projectdata.Open(dir, opts)
	is.NoErr(err)
	defer s.Close()
	_, err = s.GetRecord(ctx, "acme", "t", "1")
	pdtest.Code(t, err, projectdata.ErrServerBusy)
	_, err = s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT qty FROM t"})
	pdtest.Code(t, err, projectdata.ErrServerBusy)
	_, err = s.Insert(ctx, "acme", "t", []projectdata.Row{{"qty": 2}})
	pdtest.Code(t, err, projectdata.ErrServerBusy)
	is.NoErr(other.Close())

	_, err = s.Insert(ctx, "acme", "t", []projectdata.Row{{"qty": 2}})
	is.NoErr(err)
	row, err := s.GetRecord(ctx, "acme", "t", "1")
	is.NoErr(err)
	is.Equal(row["qty"], int64(1))
}

// TestSchemaChangeLoadsTheRegistryOnce: a schema change loads the registry
// whole once, as it begins; it reads again only the tables it changes, and
// the registry it leaves is cached when it commits, so that the reads and
// writes after it load nothing (with 300 tables of 100 columns a whole
// load took some 0.1 s: a change used to make three, and the next read a
// fourth). What the reads see is the change's registry.
func TestSchemaChangeLoadsTheRegistryOnce(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}, {Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "a", "qty": 1}, {"name": "b", "qty": 2}})
	is.NoErr(err)

	// columns reads and writes items through each path that takes the
	// registry, and returns the names of its columns.
	columns := func(t *testing.T) []string {
		is := is.New(t)
		_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "c"}})
		is.NoErr(err)
		_, err = s.GetRecord(ctx, "acme", "items", 1)
		is.NoErr(err)
		_, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{})
		is.NoErr(err)
		_, err = s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT count(*) FROM items"})
		is.NoErr(err)
		_, err = s.ListTables(ctx, "acme")
		is.NoErr(err)
		_, cols, err := s.ListColumns(ctx, "acme", "items")
		is.NoErr(err)
		var names []string
		for _, col := range cols {
			names = append(names, col.Name)
		}
		return names
	}
	columns(t) // the registry is cached

	shown := "Items"
	for _, c := range []struct {
		name   string
		change func() error
		want   []string // items' columns after the change
	}{
		{"AddColumn", func() error {
			_, err := s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "note"})
			return err
		}, []string{"id", "name", "qty", "note"}},
		{"AddColumnRebuilds", func() error {
			_, err := s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "code", Unique: true})
			return err
		}, []string{"id", "name", "qty", "note", "code"}},
		{"RenameColumn", func() error {
			_, err := s.UpdateColumn(ctx, "acme", "items", "note", projectdata.ColumnUpdate{Name: projectdata.SetTo("memo")})
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"ChangeColumnRebuilds", func() error {
			_, err := s.UpdateColumn(ctx, "acme", "items", "code", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER"), Unique: projectdata.SetTo(false)})
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"CreateTable", func() error {
			_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "other", Columns: []projectdata.ColumnDef{{Name: "x"}}})
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"UpdateTable", func() error {
			_, err := s.UpdateTable(ctx, "acme", "items", projectdata.TableUpdate{DisplayName: projectdata.SetTo(&shown)})
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"CreateIndex", func() error {
			_, err := s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"qty"}})
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"DropIndex", func() error {
			_, err := s.DropIndex(ctx, "acme", "items", "idx_items_qty")
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"DeleteTable", func() error {
			_, err := s.DeleteTable(ctx, "acme", "other")
			return err
		}, []string{"id", "name", "qty", "memo", "code"}},
		{"FailedChange", func() error {
			_, err := s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "QTY"})
			if projectdata.ErrorCode(err) != projectdata.ErrColumnExists {
				return fmt.Errorf("want column_exists, got %v", err)
			}
			return nil
		}, []string{"id", "name", "qty", "memo", "code"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			loads := projectdata.RegistryLoads()
			is.NoErr(c.change())
			is.Equal(columns(t), c.want)
			is.Equal(projectdata.RegistryLoads()-loads, int64(1)) // the change's own load, and no other
		})
	}
	tables, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(tables), 1) // other is gone
	is.True(tables[0].DisplayName != nil && *tables[0].DisplayName == shown)
}
