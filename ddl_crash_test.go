package projectdata_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// ddlCrashChildEnv names the data folder of a schema-change crash child.
const ddlCrashChildEnv = "PROJECTDATA_DDL_CRASH_CHILD"

// ddlCrashColumns is the column count of the wide tables the child makes.
const ddlCrashColumns = 300

// ddlCrashChild changes the schema until it is killed: it creates wide
// tables, deletes the one before, indexes a large table and drops the
// index, and exports it, acknowledging each change on stdout after it
// returned: T table created, D table deleted, X index created, Y index
// dropped, E export; F failure.
func ddlCrashChild(dir string) {
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		fmt.Println("F", err)
		return
	}
	out := bufio.NewWriter(os.Stdout)
	ack := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	cols := make([]projectdata.ColumnDef, ddlCrashColumns)
	for i := range cols {
		cols[i] = projectdata.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: "INTEGER", Default: i}
	}
	start := int(time.Now().UnixNano() % 1e9) // names of different runs do not collide
	for i := start; ; i++ {
		name := fmt.Sprint("w", i)
		if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: name, Columns: cols}); err != nil {
			ack("F create %v", err)
			return
		}
		ack("T %s", name)
		if i > start {
			if _, err := s.DeleteTable(ctx, "acme", fmt.Sprint("w", i-1)); err != nil {
				ack("F delete %v", err)
				return
			}
			ack("D w%d", i-1)
		}
		ix := fmt.Sprint("ix", i)
		if _, err := s.CreateIndex(ctx, "acme", "big", projectdata.IndexRequest{Columns: []string{"v", "n"}, IndexName: ix}); err != nil {
			ack("F index %v", err)
			return
		}
		ack("X %s", ix)
		if _, err := s.DropIndex(ctx, "acme", "big", ix); err != nil {
			ack("F drop index %v", err)
			return
		}
		ack("Y %s", ix)
		if i%3 == 0 {
			if _, err := s.CreateExport(ctx, "acme", "big", "csv"); err != nil {
				ack("F export %v", err)
				return
			}
			ack("E")
		}
	}
}

// TestSchemaChangeCrashSafety kills a child changing the schema (wide
// tables created and deleted, an index built over a large table and
// dropped, exports) and checks, each time, that the registry agrees with
// SQLite's own schema, every acknowledged change is there and the project
// answers.
func TestSchemaChangeCrashSafety(t *testing.T) {
	killPoints := crashKillPoints(6, 2, 30)
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "big", Columns: []projectdata.ColumnDef{
		{Name: "v"}, {Name: "n", Type: "INTEGER"},
	}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 20_000)
	for i := range rows {
		rows[i] = projectdata.Row{"v": fmt.Sprint("value-", i*7919%20_000), "n": i}
	}
	for i := 0; i < len(rows); i += 10_000 {
		_, err = s.Insert(ctx, "acme", "big", rows[i:i+10_000])
		is.NoErr(err)
	}
	is.NoErr(s.Close())

	tables := map[string]bool{} // acknowledged: true created, false deleted
	indexes := map[string]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range killPoints {
		cmd, lines := startChild(t, ddlCrashChildEnv+"="+dir)
		// Every line the child wrote acknowledges a change that committed;
		// the change after the last one may have committed too.
		var last string
		acknowledge := func(line string) {
			last = line
			kind, arg, _ := strings.Cut(line, " ")
			switch kind {
			case "T", "D":
				tables[arg] = kind == "T"
			case "X", "Y":
				indexes[arg] = kind == "X"
			case "F":
				t.Fatalf("kill point %d: child failed: %s", k, arg)
			}
		}
		killChild(t, k, cmd, lines, rng.IntN(12), time.Duration(rng.IntN(20_000))*time.Microsecond, acknowledge)
		var maybe string // the table or index the unacknowledged next change deletes
		if kind, arg, _ := strings.Cut(last, " "); kind == "T" {
			var n int
			fmt.Sscanf(arg, "w%d", &n)
			maybe = fmt.Sprint("w", n-1)
		} else if kind == "X" {
			maybe = arg
		}
		checkSchemaAfterCrash(t, k, dir, tables, indexes, maybe)
		// No later child touches maybe again (each names its own), and
		// whether its change committed stays unknown: later kill points
		// do not check it either.
		delete(tables, maybe)
		delete(indexes, maybe)
	}
}

// checkSchemaAfterCrash reopens the folder and checks that the registry
// (_pd_tables, _pd_columns, _pd_indexes, _pd_exports) and SQLite's schema
// agree, and that the acknowledged changes are there (but maybe, which
// a change that committed unacknowledged may have deleted).
func checkSchemaAfterCrash(t *testing.T, k int, dir string, tables, indexes map[string]bool, maybe string) {
	t.Helper()
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		t.Fatalf("kill point %d: reopen: %v", k, err)
	}
	defer s.Close()
	raw := pdtest.Raw(t, dir, "acme")
	query := func(sql string) []string {
		st, _, err := raw.Prepare(sql)
		if err != nil {
			t.Fatalf("kill point %d: %s: %v", k, sql, err)
		}
		defer st.Close()
		var out []string
		for st.Step() {
			out = append(out, st.ColumnText(0))
		}
		if err := st.Err(); err != nil {
			t.Fatalf("kill point %d: %s: %v", k, sql, err)
		}
		return out
	}
	if got := query(`PRAGMA integrity_check`); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("kill point %d: integrity_check: %v", k, got)
	}
	mismatches := func(what, sql string) {
		if got := query(sql); len(got) > 0 {
			t.Fatalf("kill point %d: %s: %v", k, what, got)
		}
	}
	mismatches("tables not registered", `SELECT name FROM sqlite_schema WHERE type = 'table'
		AND name NOT LIKE '\_pd\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND name NOT IN (SELECT name FROM _pd_tables)`)
	mismatches("registered tables missing", `SELECT name FROM _pd_tables WHERE name NOT IN (SELECT name FROM sqlite_schema WHERE type = 'table')`)
	mismatches("columns that differ", `SELECT t.name || '.' || coalesce(c.name, '?') || '/' || coalesce(i.name, '?')
		FROM _pd_tables AS t JOIN pragma_table_info(t.name) AS i
		LEFT JOIN (SELECT table_id, name, row_number() OVER (PARTITION BY table_id ORDER BY position) - 1 AS cid FROM _pd_columns) AS c
			ON c.table_id = t.id AND c.cid = i.cid
		WHERE c.name IS NOT i.name`)
	mismatches("column counts", `SELECT t.name FROM _pd_tables AS t
		WHERE (SELECT count(*) FROM _pd_columns WHERE table_id = t.id) != (SELECT count(*) FROM pragma_table_info(t.name))`)
	mismatches("managed indexes missing", `SELECT name FROM _pd_indexes WHERE name NOT IN (SELECT name FROM sqlite_schema WHERE type = 'index')`)
	mismatches("indexes of no registered table", `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name NOT IN (SELECT name FROM _pd_tables)
		AND tbl_name NOT LIKE '\_pd\_%' ESCAPE '\'`)
	mismatches("row counts", `SELECT t.name FROM _pd_tables AS t LEFT JOIN _pd_row_counts AS r ON r.table_id = t.id WHERE r.table_id IS NULL`)
	mismatches("leftover rebuilds", `SELECT name FROM sqlite_schema WHERE name LIKE '\_pd\_rebuild\_%' ESCAPE '\'`)

	for name, created := range tables {
		if name == maybe {
			continue
		}
		_, err := s.GetTable(ctx, "acme", name)
		if created && err != nil || !created && projectdata.ErrorCode(err) != projectdata.ErrTableNotFound {
			t.Fatalf("kill point %d: table %s (acknowledged created: %v): %v", k, name, created, err)
		}
	}
	_, ixs, err := s.ListIndexes(ctx, "acme", "big")
	if err != nil {
		t.Fatalf("kill point %d: list indexes: %v", k, err)
	}
	listed := map[string]bool{}
	for _, ix := range ixs {
		listed[ix.Name] = true
	}
	for name, created := range indexes {
		if name == maybe {
			continue
		}
		if listed[name] != created {
			t.Fatalf("kill point %d: index %s listed %v, acknowledged created %v", k, name, listed[name], created)
		}
	}
	tabs, err := s.ListTables(ctx, "acme")
	if err != nil {
		t.Fatalf("kill point %d: list tables: %v", k, err)
	}
	for _, tab := range tabs {
		if _, err := s.Insert(ctx, "acme", tab.Name, []projectdata.Row{{}}); err != nil {
			t.Fatalf("kill point %d: insert into %s: %v", k, tab.Name, err)
		}
		if _, err := s.DeleteRecords(ctx, "acme", tab.Name, projectdata.BulkDelete{Where: projectdata.Where{{Column: "id", Op: ">", Value: 20_000}}}); err != nil {
			t.Fatalf("kill point %d: delete from %s: %v", k, tab.Name, err)
		}
	}
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{Limit: 500})
	if err != nil {
		t.Fatalf("kill point %d: list exports: %v", k, err)
	}
	for _, e := range page.Exports {
		if e.Status != "ready" {
			t.Fatalf("kill point %d: export %s is %s", k, e.ID, e.Status)
		}
	}
	pdtest.CheckRowCounts(t, dir, "acme")
}
