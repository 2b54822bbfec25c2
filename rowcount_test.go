package projectdata_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestRowCountsStayExact(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	admin := pdtest.As(t, s, projectdata.RoleAdmin)
	createTable(t, s, "a", projectdata.ColumnDef{Name: "n", Type: "INTEGER"}, projectdata.ColumnDef{Name: "tag"})
	createTable(t, s, "b", projectdata.ColumnDef{Name: "k", Primary: true})
	check := func(step string, table string, want int64) {
		t.Helper()
		pdtest.CheckRowCounts(t, dir, "acme")
		if got := total(t, s, table); got != want {
			t.Fatalf("after %s: total of %s = %d, want %d", step, table, got, want)
		}
	}
	check("create", "a", 0)
	batch := make([]projectdata.Row, 100)
	for i := range batch {
		batch[i] = projectdata.Row{"n": i, "tag": []string{"x", "y"}[i%2]}
	}
	for range 3 {
		_, err = s.Insert(ctx, "acme", "a", batch)
		is.NoErr(err)
	}
	check("inserts", "a", 300)
	_, err = s.Insert(ctx, "acme", "b", rows(t, `[{"k":"x"},{"k":"y"}]`))
	is.NoErr(err)
	check("insert into another table", "b", 2)
	_, err = s.Insert(ctx, "acme", "b", rows(t, `[{"k":"z"},{"k":"x"}]`))
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	check("a failed insert", "b", 2)
	_, err = s.Insert(ctx, "acme", "a", nil)
	is.NoErr(err)
	check("an empty insert", "a", 300)

	_, err = s.DeleteRecord(ctx, "acme", "a", 5)
	is.NoErr(err)
	check("delete one", "a", 299)
	_, err = s.DeleteRecord(ctx, "acme", "a", 5)
	pdtest.Code(t, err, projectdata.ErrRecordNotFound)
	check("delete of a missing row", "a", 299)
	res, err := s.DeleteRecords(ctx, "acme", "a", projectdata.BulkDelete{Where: where(t, `{"tag":"x"}`)})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(149))
	check("bulk delete", "a", 150)
	_, err = s.UpdateRecords(ctx, "acme", "a", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "z"}, Where: where(t, `[{"column":"n","op":"<","value":50}]`)})
	is.NoErr(err)
	_, err = s.UpdateRecord(ctx, "acme", "a", 2, projectdata.Row{"n": 1000})
	is.NoErr(err)
	check("updates", "a", 150)

	_, err = s.UpdateColumn(ctx, "acme", "a", "tag", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(false)}) // rebuilds the table
	is.NoErr(err)
	check("rebuild", "a", 150)
	_, err = s.AddColumn(ctx, "acme", "a", projectdata.ColumnDef{Name: "extra"})
	is.NoErr(err)
	check("add column", "a", 150)

	_, err = s.DeleteRecords(admin, "acme", "a", projectdata.BulkDelete{AllowAll: true})
	is.NoErr(err)
	check("delete all", "a", 0)

	_, err = s.Insert(ctx, "acme", "a", batch[:10])
	is.NoErr(err)
	_, err = s.DeleteTable(ctx, "acme", "a")
	is.NoErr(err)
	createTable(t, s, "a", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	check("table deleted and made again", "a", 0)
}

func TestUnfilteredTotalIsTheKeptCount(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	createTable(t, s, "a", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	_, err = s.Insert(ctx, "acme", "a", rows(t, `[{"n":1},{"n":2}]`))
	is.NoErr(err)
	// The kept count is what an unfiltered list reports: no COUNT(*) runs.
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), `UPDATE _pd_row_counts SET row_count = 999; UPDATE _pd_row_counts_as_of SET change_id = (SELECT coalesce(max(last_id), 0) FROM _pd_changes)`)
	is.Equal(total(t, s, "a"), int64(999))
	l, err := s.ListRecords(ctx, "acme", "a", projectdata.ListOptions{Where: where(t, `[{"column":"n","op":">","value":0}]`)})
	is.NoErr(err)
	is.Equal(*l.Total, int64(2)) // a filtered total counts
}

func TestRowCountsOfAnOlderDatabase(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	createTable(t, s, "a", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	createTable(t, s, "b", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	_, err = s.Insert(ctx, "acme", "a", rows(t, `[{"n":1},{"n":2},{"n":3}]`))
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "b", rows(t, `[{"n":1}]`))
	is.NoErr(err)
	is.NoErr(s.Close())

	// Back to the control schema before row counts were kept.
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `DROP TABLE _pd_row_counts; DROP TABLE _pd_secrets; DROP TABLE _pd_idempotency; DROP TABLE _pd_changes; DROP TABLE _pd_row_counts_as_of; DROP INDEX _pd_columns_order; PRAGMA user_version = 2`)
	s, err = projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	is.Equal(total(t, s, "a"), int64(3))
	is.Equal(total(t, s, "b"), int64(1))
	pdtest.CheckRowCounts(t, dir, "acme")
	_, err = s.Insert(ctx, "acme", "a", rows(t, `[{"n":4}]`))
	is.NoErr(err)
	is.Equal(total(t, s, "a"), int64(4))
	pdtest.CheckRowCounts(t, dir, "acme")
}
