// Command gen writes an upgrade fixture: a data folder with project "acme"
// made by one release's own code, and expected.json, what that release
// read back from it. It is built inside a checkout of that release (see
// ../README.md); the directory is testdata, so the go tool never builds it
// here.
//
// Build tags say what the release has: idem (idempotent writes, control
// schema version 4 on), changes (the change log, version 5 on), snapshot
// (project exports and restore).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"

	"github.com/projectdata/projectdata"
)

// base is the fixtures' clock: every instant the release stores is base
// plus a few milliseconds.
var base = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

var tick atomic.Int64

func now() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }

// Expected is what the release read back from the project it made.
type Expected struct {
	Version  int              `json:"version"`
	Commit   string           `json:"commit"`
	Project  any              `json:"project"`
	Tables   []ExpectedTable  `json:"tables"`
	Tokens   []ExpectedToken  `json:"tokens"`
	Exports  any              `json:"exports"`
	Changes  any              `json:"changes"`  // every change, oldest first; null without a log
	Answers  []ExpectedAnswer `json:"answers"`  // stored idempotent answers
	Snapshot string           `json:"snapshot"` // the project export's file, relative to the project folder
}

// ExpectedTable is a table with its columns, indexes and rows.
type ExpectedTable struct {
	Table   any   `json:"table"`
	Columns any   `json:"columns"`
	Indexes any   `json:"indexes"`
	Rows    []any `json:"rows"`
	Total   int64 `json:"total"`
}

// ExpectedToken is a token and its secret.
type ExpectedToken struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Role   string `json:"role"`
	Secret string `json:"secret"`
	Valid  bool   `json:"valid"` // false: revoked or expired when the test reads it
}

// ExpectedAnswer is an idempotent insert and what it answered.
type ExpectedAnswer struct {
	TokenID int64  `json:"token_id"` // 0: the application's own call
	Key     string `json:"key"`
	Body    string `json:"body"` // what the fingerprint hashes
	Table   string `json:"table"`
	Rows    any    `json:"rows"`
	Result  any    `json:"result"` // the InsertResult, or null for an error
	Code    string `json:"code"`
	Message string `json:"message"`
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func must1[T any](v T, err error) T {
	must(err)
	return v
}

func where(s string) projectdata.Where {
	var w projectdata.Where
	must(json.Unmarshal([]byte(s), &w))
	return w
}

func main() {
	dir := flag.String("dir", "", "the data folder to make (must not exist)")
	version := flag.Int("version", 0, "the control schema version this release writes")
	commit := flag.String("commit", "", "the release's commit")
	flag.Parse()
	ctx := context.Background()
	s := must1(projectdata.Open(*dir, &projectdata.Options{Now: now}))
	exp := Expected{Version: *version, Commit: *commit}
	const p = "acme"
	_, admin := must1Two(s.CreateProject(ctx, p, "Acme Ünïcode ✓"))
	exp.Tokens = append(exp.Tokens, ExpectedToken{ID: admin.TokenID, Name: admin.TokenName, Role: "admin", Secret: admin.Token, Valid: true})

	// Every column type, NOT NULL with a default, UNIQUE.
	display := "All the kinds ✓"
	_, _ = must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "kinds", DisplayName: &display, Columns: []projectdata.ColumnDef{
		{Name: "id", Type: "INTEGER", Primary: true},
		{Name: "t", Type: "TEXT"},
		{Name: "i", Type: "INTEGER"},
		{Name: "r", Type: "REAL"},
		{Name: "n", Type: "NUMERIC"},
		{Name: "b", Type: "BOOLEAN"},
		{Name: "d", Type: "DATETIME"},
		{Name: "nn", Type: "TEXT", NotNull: true, Default: "dflt"},
		{Name: "u", Type: "TEXT", Unique: true},
	}}))
	must1(s.Insert(ctx, p, "kinds", []projectdata.Row{
		{"t": "héllo wörld ✓ 日本語 🎉", "i": int64(9223372036854775807), "r": 3.141592653589793, "n": 12.5, "b": true, "d": "2026-11-21T14:05:09.123Z", "u": "a"},
		{"t": nil, "i": int64(-9223372036854775808), "r": 1e-300, "n": 42, "b": false, "d": "2000-01-01T00:00:00Z", "u": nil},
		{"t": "", "i": 0, "r": 1.7976931348623157e308, "n": int64(9007199254740993), "b": nil, "d": nil, "nn": "given", "u": "b"},
		{"t": "line\nbreak \"quoted\" \\ tab\t ' ; -- x", "i": -1, "r": 0.1, "n": -0.5, "b": 1, "d": "1970-01-01T00:00:00.000Z", "u": "ü"},
		{"t": "to delete", "i": 5},
		{"t": "to update", "i": 6, "u": "c"},
	}))
	must1(s.DeleteRecord(ctx, p, "kinds", 5))
	must1(s.UpdateRecords(ctx, p, "kinds", projectdata.BulkUpdate{Data: projectdata.Row{"t": "updated ✓", "r": 2.5}, Where: where(`{"u":"c"}`)}))

	// A text primary key, managed indexes, a renamed column, a rebuilt
	// table, a column whose type changed while empty, a dropped index.
	must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "people", Columns: []projectdata.ColumnDef{
		{Name: "slug", Type: "TEXT", Primary: true},
		{Name: "full_name", Type: "TEXT", NotNull: true},
		{Name: "age", Type: "INTEGER"},
		{Name: "score", Type: "REAL"},
		{Name: "joined", Type: "DATETIME"},
		{Name: "active", Type: "BOOLEAN"},
	}}))
	must1(s.Insert(ctx, p, "people", []projectdata.Row{
		{"slug": "ann", "full_name": "Ann Ångström", "age": 41, "score": 9.5, "joined": "2020-02-29T12:00:00.000Z", "active": true},
		{"slug": "bob", "full_name": "Bob 🐟", "age": nil, "score": nil, "joined": nil, "active": false},
		{"slug": "zoë", "full_name": "Zoë Ω", "age": 7, "score": -1.25, "joined": "2026-01-01T00:00:00.000Z", "active": nil},
	}))
	must1(s.CreateIndex(ctx, p, "people", projectdata.IndexRequest{Columns: []string{"full_name"}, IndexName: "people_by_name"}))
	must1(s.CreateIndex(ctx, p, "people", projectdata.IndexRequest{Columns: []string{"age", "score"}, IndexName: "people_age_score", Unique: true}))
	must1(s.CreateIndex(ctx, p, "people", projectdata.IndexRequest{Columns: []string{"joined"}, IndexName: "people_dropped"}))
	must1(s.DropIndex(ctx, p, "people", "people_dropped"))
	must1(s.UpdateColumn(ctx, p, "people", "full_name", projectdata.ColumnUpdate{Name: projectdata.SetTo("name")}))
	must1(s.UpdateColumn(ctx, p, "people", "active", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](true)}))
	must1(s.AddColumn(ctx, p, "people", projectdata.ColumnDef{Name: "note", Type: "INTEGER"}))
	must1(s.UpdateColumn(ctx, p, "people", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("TEXT")}))
	must1(s.Insert(ctx, p, "people", []projectdata.Row{{"slug": "cy", "name": "Cy", "note": "after the rebuild"}}))

	// DATETIME values in every form a release took (the first ones stored
	// them as written; rows a release refuses are left out): a column with
	// a default and a managed index, a unique one, a primary key.
	must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "events", Columns: []projectdata.ColumnDef{
		{Name: "id", Type: "INTEGER", Primary: true},
		{Name: "at", Type: "DATETIME"},
		{Name: "once", Type: "DATETIME", Unique: true},
		{Name: "dflt", Type: "DATETIME", Default: "2026-07-08 09:10:11+02:00"},
	}}))
	must1(s.CreateIndex(ctx, p, "events", projectdata.IndexRequest{Columns: []string{"at"}, IndexName: "events_by_at"}))
	for _, r := range []projectdata.Row{
		{"at": "2026-01-02", "once": "2026-03-04"},
		{"at": "2026-01-02T10:00", "once": "2026-03-04T00:00:00Z"}, // once: the same instant as above
		{"at": "2026-01-02 10:00:00+02:00", "once": "2026-03-04T00:00:00.000Z"},
		{"at": "2026-01-02T10:00:00.5-03:30", "dflt": nil},
		{"at": "2026-01-02T10:00:00.123456Z"}, // finer than the millisecond
		{"at": "2026-01-02T23:59:59.999Z", "dflt": "2026-01-02T23:59:59.999Z"},
	} {
		_, err := s.Insert(ctx, p, "events", []projectdata.Row{r})
		if c := projectdata.ErrorCode(err); err != nil && c != "invalid_column_value" && c != "unique_violation" {
			must(err)
		}
	}
	must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "days", Columns: []projectdata.ColumnDef{
		{Name: "day", Type: "DATETIME", Primary: true},
		{Name: "what", Type: "TEXT"},
	}}))
	must1(s.Insert(ctx, p, "days", []projectdata.Row{{"day": "2026-05-06", "what": "a date"}, {"day": "2026-05-07T12:00:00+01:00", "what": "noon in Paris"}}))

	// A dropped table.
	must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "scratch", Columns: []projectdata.ColumnDef{{Name: "x", Type: "TEXT"}}}))
	must1(s.Insert(ctx, p, "scratch", []projectdata.Row{{"x": "gone"}}))
	must1(s.DeleteTable(ctx, p, "scratch"))

	// A table for a large (compressed) idempotent answer.
	must1Two(s.CreateTable(ctx, p, projectdata.TableDef{Name: "bulk", Columns: []projectdata.ColumnDef{{Name: "v", Type: "INTEGER"}}}))

	// Tokens of each role, one revoked, one expiring later, one expired
	// when the test reads it (an hour after base).
	later := base.Add(30 * 24 * time.Hour)
	soon := base.Add(10 * time.Minute)
	for _, nt := range []struct {
		name  string
		role  projectdata.Role
		exp   *time.Time
		valid bool
	}{
		{"writer", projectdata.RoleWrite, nil, true},
		{"reader", projectdata.RoleRead, nil, true},
		{"revoked", projectdata.RoleRead, nil, false},
		{"expiring", projectdata.RoleAdmin, &later, true},
		{"expired", projectdata.RoleWrite, &soon, false},
	} {
		ct := must1(s.CreateToken(ctx, p, projectdata.NewToken{Name: nt.name, Role: nt.role, ExpiresAt: nt.exp}))
		exp.Tokens = append(exp.Tokens, ExpectedToken{ID: ct.TokenID, Name: ct.TokenName, Role: string(nt.role), Secret: ct.Token, Valid: nt.valid})
		if nt.name == "revoked" {
			must1(s.RevokeToken(ctx, p, ct.TokenID))
		}
	}

	// Exports: CSV of two tables; a project snapshot where the release has
	// them.
	must1(s.CreateExport(ctx, p, "kinds", "csv"))
	must1(s.CreateExport(ctx, p, "people", "csv"))
	exp.Snapshot = snapshot(ctx, s, p, filepath.Join(*dir, p))

	// Stored idempotent answers where the release has them.
	exp.Answers = answers(ctx, s, p, exp.Tokens[1].ID)

	// Read everything back.
	proj, count := must1Two(s.GetProject(ctx, p))
	exp.Project = map[string]any{"project": proj, "table_count": count}
	for _, t := range must1(s.ListTables(ctx, p)) {
		et := ExpectedTable{Table: t}
		_, cols := must1Two(s.ListColumns(ctx, p, t.Name))
		_, idx := must1Two(s.ListIndexes(ctx, p, t.Name))
		et.Columns, et.Indexes = cols, idx
		for off := 0; ; {
			l := must1(s.ListRecords(ctx, p, t.Name, projectdata.ListOptions{Limit: 1000, Offset: off}))
			for _, r := range l.Rows {
				et.Rows = append(et.Rows, r)
			}
			et.Total = total(l.Total)
			off += len(l.Rows)
			if len(l.Rows) == 0 || int64(off) >= et.Total {
				break
			}
		}
		exp.Tables = append(exp.Tables, et)
	}
	exp.Exports = must1(s.ListExports(ctx, p, projectdata.ExportQuery{Limit: 500}))
	exp.Changes = changes(ctx, s, p)
	must(s.Close())

	// Small files: vacuum the project database (not the snapshot: its
	// manifest holds its sha256).
	db := filepath.Join(*dir, p, "project.db")
	c := must1(sqlite3.Open(db))
	must(c.Exec(`VACUUM`))
	must(c.Close())
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(db + suffix); err == nil {
			log.Fatalf("%s%s is left over", db, suffix)
		}
	}

	b := must1(json.MarshalIndent(exp, "", "\t"))
	must(os.WriteFile(filepath.Join(*dir, "expected.json"), append(b, '\n'), 0o644))
}

// total reads a list's total: an int64 in the first releases, then a
// pointer (nil when not counted).
func total(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case *int64:
		return *v
	}
	log.Fatalf("total of type %T", v)
	return 0
}

func must1Two[A, B any](a A, b B, err error) (A, B) {
	must(err)
	return a, b
}
