package projectdata_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// upgradeFixture is a testdata/upgrade/vK folder's expected.json: what the
// release that wrote the folder read back from it (see
// testdata/upgrade/README.md).
type upgradeFixture struct {
	Version int             `json:"version"`
	Commit  string          `json:"commit"`
	Project json.RawMessage `json:"project"`
	Tables  []struct {
		Table   json.RawMessage   `json:"table"`
		Columns json.RawMessage   `json:"columns"`
		Indexes json.RawMessage   `json:"indexes"`
		Rows    []json.RawMessage `json:"rows"`
		Total   int64             `json:"total"`
	} `json:"tables"`
	Tokens []struct {
		ID     int64  `json:"id"`
		Role   string `json:"role"`
		Secret string `json:"secret"`
		Valid  bool   `json:"valid"`
	} `json:"tokens"`
	Exports json.RawMessage `json:"exports"`
	Changes json.RawMessage `json:"changes"` // null: the release had no change log
	Answers []struct {
		TokenID int64           `json:"token_id"`
		Key     string          `json:"key"`
		Body    string          `json:"body"`
		Table   string          `json:"table"`
		Rows    json.RawMessage `json:"rows"`
		Result  json.RawMessage `json:"result"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
	} `json:"answers"`
	Snapshot string `json:"snapshot"`
}

// upgradeClock is when the tests read the fixtures: an hour after their
// release wrote them (exports and stored answers are live, the token
// "expired" is not).
var upgradeClock = time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)

// loadUpgradeFixture copies fixture folder src into a new temporary data
// folder and reads its expected.json.
func loadUpgradeFixture(t *testing.T, src string) (dir string, fx upgradeFixture) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(src))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "expected.json")); err != nil {
		t.Fatal(err)
	}
	return dir, fx
}

// freshProject is the data folder of a new Store holding project acme, as
// this release creates it.
func freshProject(t *testing.T) string {
	t.Helper()
	s, dir := pdtest.Open(t, nil)
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newestControlVersion is this release's control schema version: that of
// a project it creates.
func newestControlVersion(t *testing.T) int {
	return controlVersionOf(t, freshProject(t), "acme")
}

// controlVersionOf reads a project database's PRAGMA user_version.
func controlVersionOf(t *testing.T, dir, slug string) int {
	t.Helper()
	raw := pdtest.Raw(t, dir, slug)
	st, _, err := raw.Prepare(`PRAGMA user_version`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Step()
	return st.ColumnInt(0)
}

// rawDump is the stored form of everything in a project database that an
// upgrade must keep: the schema of every table and index but the control
// tables migrations make or replace, and every row of the application tables and
// of the control tables that hold what was written (project, registry,
// columns, managed indexes, tokens, export manifests, change log), each
// value with its SQLite type.
func rawDump(t *testing.T, dir, slug string) string {
	t.Helper()
	raw := pdtest.Raw(t, dir, slug)
	var out strings.Builder
	var tables []string
	query := func(sql string, row func(st *sqlite3.Stmt)) {
		st, _, err := raw.Prepare(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer st.Close()
		for st.Step() {
			row(st)
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
	}
	// DATETIME values are compared by instant (see datetimeInstant): the
	// upgrade writes them in the one form (TestUpgradeMakesDatetimesCanonical).
	datetimes := map[string]bool{} // table.column
	query(`SELECT t.name || '.' || c.name FROM _pd_columns c JOIN _pd_tables t ON t.id = c.table_id WHERE c.type = 'DATETIME'`, func(st *sqlite3.Stmt) {
		datetimes[st.ColumnText(0)] = true
	})
	kept := `'_pd_project', '_pd_tokens', '_pd_tables', '_pd_columns', '_pd_indexes', '_pd_exports'`
	// Migration 9's index of the registry's columns is not data
	// (controlSchema checks it).
	query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema
		WHERE (tbl_name IN (SELECT name FROM _pd_tables) OR tbl_name IN (`+kept+`)) AND name != '_pd_columns_order' ORDER BY type, name`, func(st *sqlite3.Stmt) {
		sql := sqlDefault.ReplaceAllStringFunc(st.ColumnText(3), func(d string) string {
			return "DEFAULT '" + datetimeInstant(strings.TrimSuffix(strings.TrimPrefix(d, "DEFAULT '"), "'")) + "'"
		})
		fmt.Fprintf(&out, "%s %s on %s: %s\n", st.ColumnText(0), st.ColumnText(1), st.ColumnText(2), sql)
		if st.ColumnText(0) == "table" {
			tables = append(tables, st.ColumnText(1))
		}
	})
	// The change log's rows, where there is one (migration 5 makes it).
	query(`SELECT name FROM sqlite_schema WHERE name = '_pd_changes'`, func(st *sqlite3.Stmt) {
		tables = append(tables, st.ColumnText(0))
	})
	for _, name := range tables {
		query(`SELECT * FROM `+sqlite3.QuoteIdentifier(name)+` ORDER BY rowid`, func(st *sqlite3.Stmt) {
			fmt.Fprintf(&out, "%s:", name)
			for i := range st.ColumnCount() {
				typ := st.ColumnType(i)
				var v any
				switch typ {
				case sqlite3.INTEGER:
					v = st.ColumnInt64(i)
				case sqlite3.FLOAT:
					v = st.ColumnFloat(i)
				case sqlite3.BLOB:
					v = hex.EncodeToString(st.ColumnBlob(i, nil))
				case sqlite3.TEXT:
					v = st.ColumnText(i)
					if datetimes[name+"."+st.ColumnName(i)] {
						v = datetimeInstant(st.ColumnText(i))
					}
					if name == "_pd_columns" && st.ColumnName(i) == "default_value" {
						v = defaultInstant(st.ColumnText(i))
					}
				}
				fmt.Fprintf(&out, " %s=%s:%#v", st.ColumnName(i), typ, v)
			}
			out.WriteByte('\n')
		})
	}
	return out.String()
}

// controlSchema lists the control tables and their indexes of a project
// database, with their SQL.
func controlSchema(t *testing.T, dir, slug string) string {
	t.Helper()
	st, _, err := pdtest.Raw(t, dir, slug).Prepare(`SELECT type, name, coalesce(sql, '') FROM sqlite_schema
		WHERE tbl_name LIKE '\_pd\_%' ESCAPE '\' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out strings.Builder
	for st.Step() {
		fmt.Fprintf(&out, "%s %s: %s\n", st.ColumnText(0), st.ColumnText(1), st.ColumnText(2))
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// releaseControl is the control schema of a project this release
// creates: its version and its control tables (see controlSchema).
type releaseControl struct {
	version int
	schema  string
}

// thisRelease reads releaseControl off a new project.
func thisRelease(t *testing.T) releaseControl {
	dir := freshProject(t)
	return releaseControl{version: controlVersionOf(t, dir, "acme"), schema: controlSchema(t, dir, "acme")}
}

// sqlDefault matches the DEFAULT clause of a text default in a table's SQL.
var sqlDefault = regexp.MustCompile(`DEFAULT '[^']*'`)

// datetimeInstant returns the instant s stands for, if it is a DATETIME
// value of any form a release stored (RFC 3339 UTC to the nanosecond),
// else s.
func datetimeInstant(s string) string {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
		}
	}
	return s
}

// defaultInstant is datetimeInstant of a default in its JSON form.
func defaultInstant(def string) string {
	var s string
	if json.Unmarshal([]byte(def), &s) != nil {
		return def
	}
	return datetimeInstant(s)
}

// datetimeRows returns rows (JSON) with the values of its DATETIME columns
// (columns, JSON) replaced by their instants.
func datetimeRows(t *testing.T, rows any, columns json.RawMessage) json.RawMessage {
	t.Helper()
	var cols []projectdata.Column
	b, err := json.Marshal(rows)
	if err == nil {
		err = json.Unmarshal(columns, &cols)
	}
	var decoded []map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(b, &decoded)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range decoded {
		for _, c := range cols {
			var s string
			if c.Type == projectdata.TypeDatetime && json.Unmarshal(r[c.Name], &s) == nil {
				r[c.Name], _ = json.Marshal(datetimeInstant(s))
			}
		}
	}
	if decoded == nil {
		decoded = []map[string]json.RawMessage{}
	}
	if b, err = json.Marshal(decoded); err != nil {
		t.Fatal(err)
	}
	return b
}

// datetimeDefaults returns columns (JSON) with the defaults of DATETIME
// columns replaced by their instants.
func datetimeDefaults(t *testing.T, columns any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(columns)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]json.RawMessage
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, c := range decoded {
		if string(c["column_type"]) == `"DATETIME"` {
			c["default_value"], _ = json.Marshal(defaultInstant(string(c["default_value"])))
		}
	}
	if b, err = json.Marshal(decoded); err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON fails the test unless got, encoded to JSON, holds everything of
// want: every member of every object of want (got may have more: what
// this release added), every element of every array, equal scalars
// (numbers compared as written).
func sameJSON(t *testing.T, what string, got any, want json.RawMessage) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	if path, ok := jsonHolds(decode(b), decode(want), what); !ok {
		t.Fatalf("%s differs:\n got: %s\nwant: %s", path, b, want)
	}
}

// jsonHolds reports whether got holds want (see sameJSON), and where not.
func jsonHolds(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return path + "." + k + " (missing)", false
			}
			if p, ok := jsonHolds(gv, wv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s (length %d, want %d)", path, len(g), len(w)), false
		}
		for i := range w {
			if p, ok := jsonHolds(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(got, want)
}

// allRows lists every row of a table, in primary key order.
func allRows(t *testing.T, s *projectdata.Store, slug, table string) []projectdata.Row {
	t.Helper()
	rows := []projectdata.Row{}
	for r, err := range s.Rows(ctx, slug, table, projectdata.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatalf("rows of %s: %v", table, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// allChanges lists a project's change log after the change id after.
func allChanges(t *testing.T, s *projectdata.Store, slug string, after int64) []projectdata.Change {
	t.Helper()
	all := []projectdata.Change{}
	for {
		page, err := s.ListChanges(ctx, slug, projectdata.ChangeQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) == 0 {
			return all
		}
		all = append(all, page.Changes...)
		after = page.NextAfter
	}
}

// upgradeFixtures returns the folders of testdata/upgrade, one per older
// control schema version.
func upgradeFixtures(t *testing.T) []string {
	t.Helper()
	fixtures, err := filepath.Glob(filepath.Join("testdata", "upgrade", "v*"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return fixtures
}

// TestUpgrade opens every project database an older release wrote
// (testdata/upgrade) with this release: the control schema reaches this
// release's version; nothing written is lost or altered (stored form,
// tables, columns, indexes, rows, totals, tokens, export manifests and
// files, change log, stored answers, which replay); and writes, queries,
// exports, the change feed, snapshots and restore work afterwards, as
// does restoring the release's own snapshot file.
func TestUpgrade(t *testing.T) {
	release := thisRelease(t)
	for _, src := range upgradeFixtures(t) {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir, fx := loadUpgradeFixture(t, src)
			if got := controlVersionOf(t, dir, "acme"); got != fx.Version || got >= release.version {
				t.Fatalf("fixture's control schema version %d, want %d (older than %d)", got, fx.Version, release.version)
			}
			s := openUpgraded(t, dir, fx, release)
			checkWritesAfterUpgrade(t, s, dir, fx)
			if fx.Snapshot != "" {
				checkOldSnapshotRestores(t, s, dir, fx)
			}
		})
	}
}

// openUpgraded opens the fixture's folder dir with this release (closed at
// the test's end), which upgrades the project, and checks that it holds
// exactly what the old release wrote, and that its stored answers replay.
func openUpgraded(t *testing.T, dir string, fx upgradeFixture, release releaseControl) *projectdata.Store {
	is := is.New(t)
	before := rawDump(t, dir, "acme")
	s, err := projectdata.Open(dir, &projectdata.Options{Now: pdtest.NewClock(upgradeClock).Now})
	is.NoErr(err)
	t.Cleanup(func() { s.Close() })
	proj, tableCount, err := s.GetProject(ctx, "acme") // opens it: migrates
	is.NoErr(err)
	is.Equal(controlVersionOf(t, dir, "acme"), release.version)
	if after := rawDump(t, dir, "acme"); after != before {
		t.Fatalf("the upgrade changed the stored data:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if got, want := controlSchema(t, dir, "acme"), release.schema; got != want {
		t.Fatalf("the upgraded control schema is not a new project's:\ngot:\n%s\nwant:\n%s", got, want)
	}
	sameJSON(t, "project", map[string]any{"project": proj, "table_count": tableCount}, fx.Project)

	tables, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(tables), len(fx.Tables))
	for i, want := range fx.Tables {
		name := tables[i].Name
		sameJSON(t, "table "+name, tables[i], want.Table)
		_, cols, err := s.ListColumns(ctx, "acme", name)
		is.NoErr(err)
		sameJSON(t, "columns of "+name, datetimeDefaults(t, cols), datetimeDefaults(t, want.Columns))
		_, idx, err := s.ListIndexes(ctx, "acme", name)
		is.NoErr(err)
		sameJSON(t, "indexes of "+name, idx, want.Indexes)
		list, err := s.ListRecords(ctx, "acme", name, projectdata.ListOptions{Limit: 1000})
		is.NoErr(err)
		is.True(list.Total != nil)
		is.Equal(*list.Total, want.Total) // the kept count
		got := datetimeRows(t, allRows(t, s, "acme", name), want.Columns)
		sameJSON(t, "rows of "+name, got, datetimeRows(t, want.Rows, want.Columns))
	}
	pdtest.CheckRowCounts(t, dir, "acme")

	exports, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{Limit: 500})
	is.NoErr(err)
	sameJSON(t, "exports", exports, fx.Exports)
	for _, e := range exports.Exports {
		got, f, err := s.OpenExport(ctx, "acme", e.ID)
		is.NoErr(err)
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		is.NoErr(err)
		is.Equal(hex.EncodeToString(h.Sum(nil)), got.SHA256) // the old file, as its manifest says
	}

	if string(fx.Changes) != "null" {
		sameJSON(t, "change log", allChanges(t, s, "acme", 0), fx.Changes)
	}

	for _, tok := range fx.Tokens {
		c, err := s.Authenticate(ctx, "acme", tok.Secret)
		if !tok.Valid {
			pdtest.Code(t, err, projectdata.ErrInvalidToken)
			continue
		}
		is.NoErr(err)
		is.Equal(c.TokenID, tok.ID)
		is.Equal(string(c.Role), tok.Role)
	}

	counts := map[string]int64{}
	for _, want := range fx.Tables {
		var tb struct {
			Name string `json:"table_name"`
		}
		is.NoErr(json.Unmarshal(want.Table, &tb))
		counts[tb.Name] = want.Total
	}
	for _, a := range fx.Answers {
		replayed := false
		kctx := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: a.Key,
			Fingerprint: func() []byte { return []byte(a.Body) }, OnReplay: func() { replayed = true }})
		if a.TokenID != 0 {
			kctx = projectdata.WithCaller(kctx, projectdata.Caller{Project: "acme", TokenID: a.TokenID, Role: projectdata.RoleWrite})
		}
		rows, err := projectdata.DecodeRows(bytes.NewReader(a.Rows), 0)
		is.NoErr(err)
		res, err := s.Insert(kctx, "acme", a.Table, rows)
		if !replayed {
			t.Fatalf("answer %q of token %d: not replayed (%v)", a.Key, a.TokenID, err)
		}
		if a.Code != "" {
			pdtest.Code(t, err, projectdata.Code(a.Code))
			is.Equal(err.Error(), a.Message)
			continue
		}
		is.NoErr(err)
		sameJSON(t, "answer "+a.Key, res, a.Result)
	}
	for name, n := range counts { // nothing replayed ran
		list, err := s.ListRecords(ctx, "acme", name, projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		is.Equal(*list.Total, n)
	}
	return s
}

// checkWritesAfterUpgrade writes to the upgraded project and reads it:
// the change log continues after the old one without a gap, the counts
// stay exact, exports, snapshots and restore work.
func checkWritesAfterUpgrade(t *testing.T, s *projectdata.Store, dir string, fx upgradeFixture) {
	is := is.New(t)
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	var old []projectdata.Change
	if string(fx.Changes) != "null" {
		is.NoErr(json.Unmarshal(fx.Changes, &old))
		is.Equal(last, old[len(old)-1].ID) // the old log's last id
	}
	kindsBefore := allRows(t, s, "acme", "kinds")

	res, err := s.Insert(ctx, "acme", "kinds", []projectdata.Row{{"t": "after ✓", "i": int64(-9223372036854775808), "d": "2026-11-22T13:00:00Z", "u": "new"}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "kinds", []projectdata.Row{{"u": "a"}}) // the old unique index holds
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	_, err = s.UpdateRecord(ctx, "acme", "people", "ann", projectdata.Row{"name": "Ann B.", "age": 42})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "people", []projectdata.Row{{"slug": "dup", "name": "x", "age": 7, "score": -1.25}})
	pdtest.Code(t, err, projectdata.ErrUniqueViolation) // the old managed unique index holds
	_, err = s.DeleteRecord(ctx, "acme", "kinds", 2)
	is.NoErr(err)
	_, err = s.AddColumn(ctx, "acme", "people", projectdata.ColumnDef{Name: "extra", Type: "REAL"})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "scratch", Columns: []projectdata.ColumnDef{{Name: "x"}}}) // the old deleted table's name
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "scratch", []projectdata.Row{{"x": "new"}})
	is.NoErr(err)

	changes := allChanges(t, s, "acme", last)
	is.True(len(changes) >= 5)
	for i, c := range changes {
		is.Equal(c.ID, last+1+int64(i)) // continues the old log: no gap, no id used twice
	}
	is.Equal(changes[0].Op, projectdata.ChangeInsert)
	is.Equal(changes[0].Key, res.InsertedIDs[0])

	kinds := allRows(t, s, "acme", "kinds")
	is.Equal(len(kinds), len(kindsBefore)) // one in, one out
	list, err := s.ListRecords(ctx, "acme", "kinds", projectdata.ListOptions{Limit: 1})
	is.NoErr(err)
	is.Equal(*list.Total, int64(len(kindsBefore)))
	list, err = s.ListRecords(ctx, "acme", "scratch", projectdata.ListOptions{Limit: 1})
	is.NoErr(err)
	is.Equal(*list.Total, int64(1)) // not the old deleted table's row
	people, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: whereOf(t, `{"name":"Ann B."}`), Columns: []string{"slug", "age"}})
	is.NoErr(err)
	is.Equal(people.Rows, []projectdata.Row{{"slug": "ann", "age": int64(42)}})
	q, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT max(i), min(i), count(*) FROM kinds`})
	is.NoErr(err)
	is.Equal(q.Rows, []projectdata.Row{{"max(i)": int64(9223372036854775807), "min(i)": int64(-9223372036854775808), "count(*)": int64(len(kinds))}})
	pdtest.CheckRowCounts(t, dir, "acme")

	e, err := s.CreateExport(ctx, "acme", "kinds", "csv")
	is.NoErr(err)
	is.Equal(e.RowCount, int64(len(kinds)))

	// A snapshot of the upgraded project restores, with its tokens.
	_, err = s.RestoreProject(ctx, "copy", pdtest.Snapshot(t, s))
	is.NoErr(err)
	is.Equal(allRows(t, s, "copy", "kinds"), kinds)
	is.Equal(allRows(t, s, "copy", "people"), allRows(t, s, "acme", "people"))
	c, err := s.Authenticate(ctx, "copy", fx.Tokens[0].Secret)
	is.NoErr(err)
	is.Equal(c.TokenID, fx.Tokens[0].ID)
}

// checkOldSnapshotRestores restores the project export the old release
// made into this release: it holds what the project held then (the rows
// of the stored answers came after it), its tokens work, and it takes
// writes.
func checkOldSnapshotRestores(t *testing.T, s *projectdata.Store, dir string, fx upgradeFixture) {
	is := is.New(t)
	_, err := s.RestoreProject(ctx, "old-snapshot", filepath.Join(dir, "acme", filepath.FromSlash(fx.Snapshot)))
	is.NoErr(err)
	later := map[string]bool{}
	for _, a := range fx.Answers {
		var rows []map[string]any
		is.NoErr(json.Unmarshal(a.Rows, &rows))
		if a.Result != nil && string(a.Result) != "null" && a.Table == "people" {
			later[rows[0]["slug"].(string)] = true
		}
	}
	for _, want := range fx.Tables {
		var tb struct {
			Name string `json:"table_name"`
		}
		is.NoErr(json.Unmarshal(want.Table, &tb))
		var rows []json.RawMessage
		for _, r := range want.Rows {
			var key struct{ Slug string }
			is.NoErr(json.Unmarshal(r, &key))
			if tb.Name != "bulk" && !later[key.Slug] {
				rows = append(rows, r)
			}
		}
		got := datetimeRows(t, allRows(t, s, "old-snapshot", tb.Name), want.Columns)
		sameJSON(t, "restored rows of "+tb.Name, got, datetimeRows(t, rows, want.Columns))
	}
	for _, tok := range fx.Tokens {
		_, err := s.Authenticate(ctx, "old-snapshot", tok.Secret)
		if tok.Valid {
			is.NoErr(err)
		} else {
			pdtest.Code(t, err, projectdata.ErrInvalidToken)
		}
	}
	_, err = s.Insert(ctx, "old-snapshot", "people", []projectdata.Row{{"slug": "restored", "name": "R"}})
	is.NoErr(err)
	_, err = s.UpdateRecords(ctx, "old-snapshot", "kinds", projectdata.BulkUpdate{Data: projectdata.Row{"r": 1.5}, AllowAll: true})
	is.NoErr(err)
	pdtest.CheckRowCounts(t, dir, "old-snapshot")
}

// whereOf decodes a where condition in its JSON form.
func whereOf(t *testing.T, s string) projectdata.Where {
	t.Helper()
	var w projectdata.Where
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestNewerControlSchemaIsRefused opens a project database whose control
// schema is newer than this release knows: the project is refused with an
// error that says so, and its file is left as it was.
func TestNewerControlSchemaIsRefused(t *testing.T) {
	is := is.New(t)
	newest := newestControlVersion(t)
	dir, _ := loadUpgradeFixture(t, filepath.Join("testdata", "upgrade", "v6"))
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), fmt.Sprintf(`PRAGMA user_version = %d`, newest+1))
	sum := pdtest.FileSum(t, dir, "acme")
	s, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	_, _, err = s.GetProject(ctx, "acme")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), fmt.Sprintf("control schema version %d is newer than this release knows (%d)", newest+1, newest)))
	_, err = s.Insert(ctx, "acme", "kinds", []projectdata.Row{{"t": "x"}})
	is.True(err != nil)
	is.NoErr(s.Close())
	is.Equal(pdtest.FileSum(t, dir, "acme"), sum)
	is.Equal(controlVersionOf(t, dir, "acme"), newest+1)
}

// TestInterruptedUpgradeResumes stops the upgrade of every fixture after
// each version's transaction, as a crash between two of them leaves it,
// and opens the project with this release: the upgrade resumes where it
// stopped and the project holds what its release wrote.
func TestInterruptedUpgradeResumes(t *testing.T) {
	release := thisRelease(t)
	for _, src := range upgradeFixtures(t) {
		for stop := 0; stop < release.version; stop++ {
			dir, fx := loadUpgradeFixture(t, src)
			if stop <= fx.Version {
				continue
			}
			t.Run(fmt.Sprintf("%s/stopped-at-%d", filepath.Base(src), stop), func(t *testing.T) {
				if err := projectdata.MigrateTo(filepath.Join(dir, "acme", "project.db"), stop); err != nil {
					t.Fatal(err)
				}
				if got := controlVersionOf(t, dir, "acme"); got != stop {
					t.Fatalf("stopped at version %d, want %d", got, stop)
				}
				openUpgraded(t, dir, fx, release)
			})
		}
	}
}

// TestUpgradeMakesDatetimesCanonical opens the project of the first
// release, which stored DATETIME values as written ("2026-01-02",
// "2026-01-02 10:00:00+02:00"), where every later release stores RFC 3339
// UTC to the millisecond and compares where values in that form: the
// upgrade rewrites them, defaults too, so that a where, an order or a key
// finds them. A value this release refuses (finer than the millisecond)
// and one whose form would collide with another row's in a unique column
// stay as written.
func TestUpgradeMakesDatetimesCanonical(t *testing.T) {
	is := is.New(t)
	dir, _ := loadUpgradeFixture(t, filepath.Join("testdata", "upgrade", "v1"))
	s, err := projectdata.Open(dir, &projectdata.Options{Now: pdtest.NewClock(upgradeClock).Now})
	is.NoErr(err)
	defer s.Close()

	is.Equal(allRows(t, s, "acme", "events"), []projectdata.Row{
		{"id": int64(1), "at": "2026-01-02T00:00:00.000Z", "once": "2026-03-04", "dflt": "2026-07-08T07:10:11.000Z"},
		{"id": int64(2), "at": "2026-01-02T10:00:00.000Z", "once": "2026-03-04T00:00:00Z", "dflt": "2026-07-08T07:10:11.000Z"},
		{"id": int64(3), "at": "2026-01-02T08:00:00.000Z", "once": "2026-03-04T00:00:00.000Z", "dflt": "2026-07-08T07:10:11.000Z"},
		{"id": int64(4), "at": "2026-01-02T13:30:00.500Z", "once": nil, "dflt": nil},
		{"id": int64(5), "at": "2026-01-02T10:00:00.123456Z", "once": nil, "dflt": "2026-07-08T07:10:11.000Z"},
		{"id": int64(6), "at": "2026-01-02T23:59:59.999Z", "once": nil, "dflt": "2026-01-02T23:59:59.999Z"},
	})
	is.Equal(allRows(t, s, "acme", "days"), []projectdata.Row{
		{"day": "2026-05-06T00:00:00.000Z", "what": "a date"},
		{"day": "2026-05-07T11:00:00.000Z", "what": "noon in Paris"},
	})
	is.Equal(allRows(t, s, "acme", "kinds")[1]["d"], "2000-01-01T00:00:00.000Z")

	// A where, an order and a key find them, in any form.
	found, err := s.ListRecords(ctx, "acme", "events", projectdata.ListOptions{Where: whereOf(t, `{"at":"2026-01-02"}`), Columns: []string{"id"}})
	is.NoErr(err)
	is.Equal(found.Rows, []projectdata.Row{{"id": int64(1)}})
	found, err = s.ListRecords(ctx, "acme", "events", projectdata.ListOptions{Where: whereOf(t, `[{"column":"at","op":"<","value":"2026-01-02T10:00:00.200Z"}]`), Order: "at", Columns: []string{"id"}})
	is.NoErr(err)
	is.Equal(found.Rows, []projectdata.Row{{"id": int64(1)}, {"id": int64(3)}, {"id": int64(2)}, {"id": int64(5)}})
	found, err = s.ListRecords(ctx, "acme", "kinds", projectdata.ListOptions{Where: whereOf(t, `{"d":"2000-01-01T00:00:00Z"}`), Columns: []string{"id"}})
	is.NoErr(err)
	is.Equal(found.Rows, []projectdata.Row{{"id": int64(2)}})
	day, err := s.GetRecord(ctx, "acme", "days", "2026-05-06")
	is.NoErr(err)
	is.Equal(day["what"], "a date")

	// The default is canonical in the registry and in the table: a new
	// row gets it in the canonical form; the managed index is kept.
	_, cols, err := s.ListColumns(ctx, "acme", "events")
	is.NoErr(err)
	is.Equal(cols[3].DefaultValue, "2026-07-08T07:10:11.000Z")
	res, err := s.Insert(ctx, "acme", "events", []projectdata.Row{{"at": "2026-01-03"}})
	is.NoErr(err)
	row, err := s.GetRecord(ctx, "acme", "events", res.InsertedIDs[0])
	is.NoErr(err)
	is.Equal(row["dflt"], "2026-07-08T07:10:11.000Z")
	_, idx, err := s.ListIndexes(ctx, "acme", "events")
	is.NoErr(err)
	is.Equal(len(idx), 1)
	is.Equal(idx[0].Name, "events_by_at")
	pdtest.CheckRowCounts(t, dir, "acme")
}

// TestOperationsDoNotPileUpBehindAnUpgrade: the first open after an upgrade
// migrates the project's data, seconds on big tables. An operation that
// comes meanwhile waits for it as long as for a connection (QueueTimeout),
// then is told to retry; it waited for the whole open.
func TestOperationsDoNotPileUpBehindAnUpgrade(t *testing.T) {
	is := is.New(t)
	dir, _ := loadUpgradeFixture(t, filepath.Join("testdata", "upgrade", "v7"))
	// Another program holds the write lock: the migration waits for it.
	raw, err := sqlite3.Open(filepath.Join(dir, "acme", "project.db"))
	is.NoErr(err)
	defer raw.Close()
	is.NoErr(raw.Exec(`BEGIN IMMEDIATE`))
	s, err := projectdata.Open(dir, &projectdata.Options{QueueTimeout: 500 * time.Millisecond, BusyTimeout: time.Minute})
	is.NoErr(err)
	defer s.Close()
	opened := make(chan error, 1)
	go func() {
		_, err := s.ListTables(ctx, "acme") // opens the project, and migrates it
		opened <- err
	}()
	for s.Stats().OpenProjects == 0 { // the open is under way
		time.Sleep(time.Millisecond)
	}
	_, err = s.ListTables(ctx, "acme")
	pdtest.Code(t, err, projectdata.ErrServerBusy)
	// A context that ends during the wait, before QueueTimeout: its error.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = s.ListTables(cctx, "acme")
	is.True(errors.Is(err, context.DeadlineExceeded))

	is.NoErr(raw.Exec(`COMMIT`))
	is.NoErr(<-opened)
	_, err = s.ListTables(ctx, "acme")
	is.NoErr(err)
}
