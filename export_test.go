package projectdata_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var exportEpoch = time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC)

const exportWeek = 7 * 24 * time.Hour

// exportFixture is a project whose clock is settable, with a table notes(id,
// body TEXT, n INTEGER, r REAL) holding awkward values, seeded through raw.
type exportFixture struct {
	s     *projectdata.Store
	dir   string
	raw   *sqlite3.Conn
	clock *pdtest.Clock
}

// notesCSV is the export of the seeded notes table, byte for byte.
const notesCSV = "id,body,n,r\n" +
	"1,plain,1,1.5\n" +
	"2,,,\n" +
	"3,\"a,b\",-7,0.1\n" +
	"4,\"say \"\"hi\"\"\",9223372036854775807,1e+300\n" +
	"5,\"line1\nline2\",0,-2.25\n" +
	"6,\"cr\rlf\r\n\",-9223372036854775808,1e-07\n" +
	"7,naïve ☃ 日本 😀,3,100\n" +
	"8,AP8Q,4,3\n" +
	"9,\" lead\",5,\n" +
	"10,\"\"\"\",6,0.30000000000000004\n"

func newExportFixture(t *testing.T, opts *projectdata.Options) exportFixture {
	t.Helper()
	clock := pdtest.NewClock(exportEpoch)
	if opts == nil {
		opts = &projectdata.Options{}
	}
	opts.Now = clock.Now
	s, dir := pdtest.Open(t, opts)
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	def := projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}, {Name: "n", Type: "INTEGER"}, {Name: "r", Type: "REAL"}}}
	if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
		t.Fatal(err)
	}
	raw := pdtest.Raw(t, dir, "acme")
	// Out of key order on purpose: the export is in primary-key order.
	pdtest.Exec(t, raw, `INSERT INTO notes (id, body, n, r) VALUES
		(10, '"', 6, 0.1 + 0.2),
		(3, 'a,b', -7, 0.1),
		(1, 'plain', 1, 1.5),
		(2, NULL, NULL, NULL),
		(4, 'say "hi"', 9223372036854775807, 1e300),
		(5, 'line1' || char(10) || 'line2', 0, -2.25),
		(6, 'cr' || char(13) || 'lf' || char(13, 10), -9223372036854775808, 0.0000001),
		(7, 'naïve ☃ 日本 😀', 3, 100.0),
		(8, x'00ff10', 4, 3),
		(9, ' lead', 5, NULL)`)
	return exportFixture{s: s, dir: dir, raw: raw, clock: clock}
}

// file returns the path of an export's file.
func (f exportFixture) file(id string) string {
	return filepath.Join(f.dir, "acme", "exports", id+".csv")
}

// export creates an export of notes and fails the test on error.
func (f exportFixture) export(t *testing.T) projectdata.Export {
	t.Helper()
	e, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// exportsDir lists the names in the project's exports folder.
func (f exportFixture) exportsDir(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.dir, "acme", "exports"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func exportIDs(exports []projectdata.Export) []string {
	out := []string{}
	for _, e := range exports {
		out = append(out, e.ID)
	}
	return out
}

func TestExportTellsNullFromTheEmptyString(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "edge", Columns: []projectdata.ColumnDef{{Name: "body"}, {Name: "r", Type: "REAL"}}})
	is.NoErr(err)
	pdtest.Exec(t, f.raw, `INSERT INTO edge (id, body, r) VALUES
		(1, NULL, NULL), (2, '', 9e999), (3, '\.', -9e999), (4, char(9) || 'tab', 0), (5, 'x', 2.5)`)
	e, err := f.s.CreateExport(ctx, "acme", "edge", "csv")
	is.NoErr(err)
	b, err := os.ReadFile(f.file(e.ID))
	is.NoErr(err)
	is.Equal(string(b), "id,body,r\n"+
		"1,,\n"+ // NULL: an empty field
		"2,\"\",Inf\n"+ // the empty string: a quoted one
		"3,\"\\.\",-Inf\n"+
		"4,\"\ttab\",0\n"+
		"5,x,2.5\n")
	records, err := csv.NewReader(bytes.NewReader(b)).ReadAll() // still plain CSV
	is.NoErr(err)
	is.Equal(records[2], []string{"2", "", "Inf"})
}

func TestCreateExport(t *testing.T) {
	t.Run("ContentIsExact", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		b, err := os.ReadFile(f.file(e.ID))
		is.NoErr(err)
		is.Equal(string(b), notesCSV)
		is.Equal(e.RowCount, int64(10))
	})
	t.Run("FileMatchesManifest", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		b, err := os.ReadFile(f.file(e.ID))
		is.NoErr(err)
		sum := sha256.Sum256(b)
		is.Equal(e.SHA256, hex.EncodeToString(sum[:]))
		is.Equal(e.SizeBytes, int64(len(b)))
		records, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		is.NoErr(err)
		is.Equal(int64(len(records)-1), e.RowCount)

		is.True(regexp.MustCompile(`^exp_[a-z0-9]+$`).MatchString(e.ID))
		is.True(regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(e.SHA256))
		is.Equal(e, projectdata.Export{
			ID: e.ID, Kind: "table_export", Scope: "project", Project: "acme", Table: ptr("notes"), Format: "csv",
			DownloadName: "notes-20261121T140509Z.csv", DownloadURL: "/projects/acme/export/download/" + e.ID,
			StorageBackend: "local", ContentType: "text/csv; charset=utf-8",
			RowCount: 10, TableCount: ptr(int64(1)), SizeBytes: e.SizeBytes, SHA256: e.SHA256,
			Status: "ready", CreatedAt: projectdata.Timestamp{Time: exportEpoch}, ExpiresAt: projectdata.Timestamp{Time: exportEpoch.Add(exportWeek)},
		})
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(page.Exports, []projectdata.Export{e}) // as stored

		js, err := json.Marshal(e)
		is.NoErr(err)
		var fields map[string]any
		is.NoErr(json.Unmarshal(js, &fields))
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		is.Equal(keys, []string{"content_type", "created_at", "download_name", "download_url", "expires_at", "format", "id", "kind",
			"missing_at", "project", "row_count", "scope", "sha256", "size_bytes", "status", "status_reason", "storage_backend", "table", "table_count"})
		is.Equal(fields["table_count"], 1.0)
		is.Equal(fields["status_reason"], nil)
		is.Equal(fields["missing_at"], nil)
		is.Equal(fields["created_at"], "2026-11-21T14:05:09.123Z")
		is.Equal(fields["expires_at"], "2026-11-28T14:05:09.123Z")
	})
	t.Run("LeavesOnlyTheFile", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		is.Equal(f.exportsDir(t), []string{e.ID + ".csv"}) // no temporary file
	})
	t.Run("ExpiresAfterExportTTL", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, &projectdata.Options{ExportTTL: time.Hour})
		e := f.export(t)
		is.Equal(e.ExpiresAt.Time, exportEpoch.Add(time.Hour))
	})
	t.Run("TableByIDAndFormatInAnyCase", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		tbl, err := f.s.GetTable(ctx, "acme", "notes")
		is.NoErr(err)
		for _, format := range []string{"", "CSV", "Csv"} {
			e, err := f.s.CreateExport(ctx, "acme", strconv.FormatInt(tbl.ID, 10), format)
			is.NoErr(err)
			is.Equal(e.Format, "csv")
			is.Equal(*e.Table, "notes")
		}
	})
	t.Run("TextPrimaryKeyOrder", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "skus", Columns: []projectdata.ColumnDef{{Name: "sku", Primary: true}, {Name: "n", Type: "INTEGER"}}})
		is.NoErr(err)
		pdtest.Exec(t, f.raw, `INSERT INTO skus VALUES ('b', 1), ('c', 2), ('a', 3)`)
		e, err := f.s.CreateExport(ctx, "acme", "skus", "csv")
		is.NoErr(err)
		b, err := os.ReadFile(f.file(e.ID))
		is.NoErr(err)
		is.Equal(string(b), "sku,n\na,3\nb,1\nc,2\n")
	})
	t.Run("EmptyTable", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "empty", Columns: []projectdata.ColumnDef{{Name: "a"}}})
		is.NoErr(err)
		e, err := f.s.CreateExport(ctx, "acme", "empty", "")
		is.NoErr(err)
		is.Equal(e.RowCount, int64(0))
		is.Equal(e.SizeBytes, int64(len("id,a\n")))
	})

	refusals := []struct {
		name, table, format string
		code                projectdata.Code
	}{
		{"OtherFormat", "notes", "json", projectdata.ErrInvalidExportFormat},
		{"FormatWithSpace", "notes", "csv ", projectdata.ErrInvalidExportFormat},
		{"UnknownTable", "nope", "csv", projectdata.ErrTableNotFound},
		{"UnknownTableID", "999", "csv", projectdata.ErrTableNotFound},
		{"ControlTable", "_pd_tokens", "csv", projectdata.ErrTableNotFound},
		{"NoTable", "", "csv", projectdata.ErrInvalidRequest},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			f := newExportFixture(t, nil)
			_, err := f.s.CreateExport(ctx, "acme", c.table, c.format)
			pdtest.Code(t, err, c.code)
			is.Equal(f.exportsDir(t), []string{})
			page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
			is.NoErr(err)
			is.Equal(page.Total, 0)
		})
	}
	t.Run("FailedManifestLeavesNoFile", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		pdtest.Exec(t, f.raw, `CREATE TRIGGER no_manifests BEFORE INSERT ON _pd_exports BEGIN SELECT RAISE(ABORT, 'refused'); END`)
		_, err := f.s.CreateExport(ctx, "acme", "notes", "csv")
		is.True(err != nil)
		is.Equal(f.exportsDir(t), []string{}) // neither the file nor a temporary one
		is.Equal(rawCount(t, f.raw, `SELECT count(*) FROM _pd_exports`), 0)
	})
}

// exportsAt creates n exports of notes, a minute apart, oldest first.
func (f exportFixture) exportsAt(t *testing.T, n int) []projectdata.Export {
	t.Helper()
	var out []projectdata.Export
	for range n {
		out = append(out, f.export(t))
		f.clock.Advance(time.Minute)
	}
	return out
}

func TestListExports(t *testing.T) {
	t.Run("NewestFirstAndPaged", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.exportsAt(t, 5)
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(exportIDs(page.Exports), exportIDs([]projectdata.Export{e[4], e[3], e[2], e[1], e[0]}))
		is.Equal([]int{page.Total, page.Limit, page.Offset}, []int{5, 50, 0})

		page, err = f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: "all", Limit: 2, Offset: 1})
		is.NoErr(err)
		is.Equal(exportIDs(page.Exports), exportIDs([]projectdata.Export{e[3], e[2]}))
		is.Equal([]int{page.Total, page.Limit, page.Offset}, []int{5, 2, 1})

		page, err = f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Offset: 5})
		is.NoErr(err)
		is.Equal(page.Exports, []projectdata.Export{})
		is.Equal(page.Total, 5)
	})
	t.Run("SameInstantNewestFirst", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		a, b := f.export(t), f.export(t)
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(exportIDs(page.Exports), []string{b.ID, a.ID})
	})
	limits := []struct {
		name       string
		limit, use int
	}{
		{"ZeroIsDefault", 0, 50}, {"One", 1, 1}, {"Max", 500, 500}, {"AboveMaxClamps", 501, 500}, {"NegativeClamps", -3, 1},
	}
	for _, c := range limits {
		t.Run("Limit"+c.name, func(t *testing.T) {
			is := is.New(t)
			f := newExportFixture(t, nil)
			f.export(t)
			page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Limit: c.limit})
			is.NoErr(err)
			is.Equal(page.Limit, c.use)
			is.Equal(len(page.Exports), 1)
		})
	}
	refusals := []struct {
		name string
		q    projectdata.ExportQuery
		code projectdata.Code
	}{
		{"UnknownStatus", projectdata.ExportQuery{Status: "gone"}, projectdata.ErrInvalidExportStatus},
		{"StatusInOtherCase", projectdata.ExportQuery{Status: "READY"}, projectdata.ErrInvalidExportStatus},
		{"NegativeOffset", projectdata.ExportQuery{Offset: -1}, projectdata.ErrInvalidRequest},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			f := newExportFixture(t, nil)
			_, err := f.s.ListExports(ctx, "acme", c.q)
			pdtest.Code(t, err, c.code)
		})
	}
	t.Run("StatusFilter", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.exportsAt(t, 4)
		is.NoErr(os.Remove(f.file(e[1].ID)))
		cases := []struct {
			status string
			want   []string
		}{
			{"", []string{e[3].ID, e[2].ID, e[1].ID, e[0].ID}},
			{"all", []string{e[3].ID, e[2].ID, e[1].ID, e[0].ID}},
			{"ready", []string{e[3].ID, e[2].ID, e[0].ID}},
			{"not_found", []string{e[1].ID}},
		}
		for _, c := range cases {
			page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: c.status})
			is.NoErr(err)
			is.Equal(exportIDs(page.Exports), c.want)
			is.Equal(page.Total, len(c.want))
		}
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: "ready", Limit: 1, Offset: 1})
		is.NoErr(err)
		is.Equal(exportIDs(page.Exports), []string{e[2].ID})
		is.Equal(page.Total, 3)
	})
	t.Run("MissingFileBecomesNotFound", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		f.clock.Advance(time.Hour)
		is.NoErr(os.Remove(f.file(e.ID)))
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		want := e
		want.Status, want.StatusReason, want.MissingAt = "not_found", ptr("file_missing"), &projectdata.Timestamp{Time: exportEpoch.Add(time.Hour)}
		is.Equal(page.Exports, []projectdata.Export{want})

		f.clock.Advance(time.Hour) // missing_at stays when it was first seen
		page, err = f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(page.Exports, []projectdata.Export{want})
	})
	t.Run("ExpiryRemovesTheFile", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		old := f.export(t)
		f.clock.Advance(3 * 24 * time.Hour)
		young := f.export(t)
		f.clock.Advance(exportWeek - 3*24*time.Hour) // old reaches expires_at exactly
		page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(exportIDs(page.Exports), []string{young.ID, old.ID})
		is.Equal(page.Exports[0], young)
		got := page.Exports[1]
		is.Equal(got.Status, "not_found")
		is.Equal(*got.StatusReason, "expired")
		is.Equal(got.MissingAt.Time, exportEpoch.Add(exportWeek))
		_, err = os.Stat(f.file(old.ID))
		is.True(os.IsNotExist(err))
		is.Equal(f.exportsDir(t), []string{young.ID + ".csv"})
	})
	t.Run("NothingChangedWritesNothing", func(t *testing.T) {
		is := is.New(t)
		// No checkpoints: the background one, due 250 ms after the last
		// write, would change the files under a slow run.
		f := newExportFixture(t, &projectdata.Options{ReplicatorCheckpoints: true})
		f.exportsAt(t, 3)
		before := pdtest.FileSum(t, f.dir, "acme")
		_, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
		is.NoErr(err)
		is.Equal(pdtest.FileSum(t, f.dir, "acme"), before)
	})
}

func TestDeleteNotFoundExports(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	f.export(t) // expires before the others
	f.clock.Advance(2 * 24 * time.Hour)
	e := f.exportsAt(t, 3) // ready, missing, ready
	is.NoErr(os.Remove(f.file(e[1].ID)))
	f.clock.Advance(exportWeek - 2*24*time.Hour) // the first export expires

	n, err := f.s.DeleteNotFoundExports(ctx, "acme") // reconciles first
	is.NoErr(err)
	is.Equal(n, 2)
	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(page.Exports, []projectdata.Export{e[2], e[0]})
	files := []string{e[0].ID + ".csv", e[2].ID + ".csv"}
	sort.Strings(files)
	is.Equal(f.exportsDir(t), files) // the expired file was removed

	n, err = f.s.DeleteNotFoundExports(ctx, "acme")
	is.NoErr(err)
	is.Equal(n, 0)
}

func TestOpenExport(t *testing.T) {
	t.Run("OpensTheFile", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		got, file, err := f.s.OpenExport(ctx, "acme", e.ID)
		is.NoErr(err)
		defer file.Close()
		is.Equal(got, e)
		b, err := io.ReadAll(file)
		is.NoErr(err)
		is.Equal(string(b), notesCSV)
	})
	for _, id := range []string{"", "../x", "exp_../../a", "exp_abc/../../x", "exp_ABC", "EXP_abc", "exp_", "exp_abc.csv", "exp_abc\x00", "exp_zzzzzzzz"} {
		t.Run("RefusesID"+strconv.Quote(id), func(t *testing.T) {
			is := is.New(t)
			f := newExportFixture(t, nil)
			e := f.export(t)
			// A manifest under the malformed id, pointing at a real file:
			// only the id's form keeps it from being opened.
			if id != "exp_zzzzzzzz" {
				f.copyManifest(t, e.ID, id, e.ID+".csv")
			}
			_, file, err := f.s.OpenExport(ctx, "acme", id)
			pdtest.Code(t, err, projectdata.ErrExportNotFound)
			is.True(file == nil)
		})
	}
	t.Run("RefusesStoredFileNameOutsideTheFolder", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		is.NoErr(os.WriteFile(filepath.Join(f.dir, "acme", "x.csv"), []byte("secret"), 0o600))
		f.copyManifest(t, e.ID, "exp_planted", "../x.csv")
		_, file, err := f.s.OpenExport(ctx, "acme", "exp_planted")
		pdtest.Code(t, err, projectdata.ErrExportNotFound)
		is.True(file == nil)
	})
	t.Run("MissingFileIsNotFoundAndMarked", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		is.NoErr(os.Remove(f.file(e.ID)))
		_, _, err := f.s.OpenExport(ctx, "acme", e.ID)
		pdtest.Code(t, err, projectdata.ErrExportNotFound)
		is.Equal(rawCount(t, f.raw, `SELECT count(*) FROM _pd_exports WHERE status = 'not_found' AND status_reason = 'file_missing' AND missing_at IS NOT NULL`), 1)
	})
	t.Run("ExpiredIsNotFoundAndRemoved", func(t *testing.T) {
		is := is.New(t)
		f := newExportFixture(t, nil)
		e := f.export(t)
		f.clock.Advance(exportWeek)
		_, _, err := f.s.OpenExport(ctx, "acme", e.ID)
		pdtest.Code(t, err, projectdata.ErrExportNotFound)
		_, err = os.Stat(f.file(e.ID))
		is.True(os.IsNotExist(err))
		is.Equal(rawCount(t, f.raw, `SELECT count(*) FROM _pd_exports WHERE status = 'not_found' AND status_reason = 'expired'`), 1)
		_, _, err = f.s.OpenExport(ctx, "acme", e.ID) // and stays so
		pdtest.Code(t, err, projectdata.ErrExportNotFound)
	})
}

// copyManifest plants a copy of manifest from, with another id and file
// name, behind the Store's back.
func (f exportFixture) copyManifest(t *testing.T, from, id, fileName string) {
	t.Helper()
	st, _, err := f.raw.Prepare(`INSERT INTO _pd_exports (id, kind, scope, table_name, format, file_name, download_name, content_type,
		row_count, table_count, size_bytes, sha256, status, created_at, expires_at)
		SELECT ?, kind, scope, table_name, format, ?, download_name, content_type,
		row_count, table_count, size_bytes, sha256, status, created_at, expires_at FROM _pd_exports WHERE id = ?`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.BindText(1, id)
	st.BindText(2, fileName)
	st.BindText(3, from)
	if err := st.Exec(); err != nil {
		t.Fatal(err)
	}
}

// TestExportIsConsistentSnapshot exports a large table while another
// connection keeps inserting rows with the next ids in small transactions:
// the file must hold exactly the rows 1..N committed at one instant.
func TestExportIsConsistentSnapshot(t *testing.T) {
	is := is.New(t)
	initial := 100_000
	if testing.Short() {
		initial = 10_000
	}
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "seq", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), fmt.Sprintf(`INSERT INTO seq (id, v) SELECT value, 'row' || value FROM generate_series(1, %d)`, initial))

	writer := pdtest.Raw(t, dir, "acme")
	var (
		committed atomic.Int64 // rows committed by the writer
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		werr      error
	)
	committed.Store(int64(initial))
	wg.Go(func() {
		next := initial + 1
		for {
			select {
			case <-stop:
				return
			default:
			}
			werr = writer.Exec(fmt.Sprintf(`BEGIN IMMEDIATE; INSERT INTO seq (id, v) SELECT value, 'row' || value FROM generate_series(%d, %d); COMMIT`, next, next+9))
			if werr != nil {
				return
			}
			next += 10
			committed.Store(int64(next - 1))
		}
	})
	for committed.Load() < int64(initial+100) {
		time.Sleep(time.Millisecond)
	}
	before := committed.Load()
	e, err := s.CreateExport(ctx, "acme", "seq", "csv")
	after := committed.Load()
	close(stop)
	wg.Wait()
	is.NoErr(err)
	is.NoErr(werr)

	file, err := os.Open(filepath.Join(dir, "acme", "exports", e.ID+".csv"))
	is.NoErr(err)
	defer file.Close()
	r := csv.NewReader(file)
	r.ReuseRecord = true
	header, err := r.Read()
	is.NoErr(err)
	is.Equal(header, []string{"id", "v"})
	n := int64(0)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		is.NoErr(err)
		n++
		if rec[0] != strconv.FormatInt(n, 10) || rec[1] != "row"+rec[0] {
			t.Fatalf("row %d is %q: the export is not ids 1..N in order", n, rec)
		}
	}
	is.Equal(n, e.RowCount)
	is.True(n >= before) // every row committed before the export began
	is.True(n <= after)  // and none that was not yet committed when it ended
	t.Logf("exported %d rows; the writer committed %d rows during the export", n, after-before)
}

func TestOpeningAProjectSweepsCrashLeftovers(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t"})
	is.NoErr(err)
	exp, err := s.CreateExport(ctx, "acme", "t", "csv")
	is.NoErr(err)
	is.NoErr(s.Close())

	exports := filepath.Join(dir, "acme", "exports")
	old := time.Now().Add(-2 * time.Hour)
	files := map[string]bool{ // name → kept
		exp.ID + ".csv":          true,  // has a manifest, however old
		".exp_abc.csv.123.tmp":   false, // a stale temporary file
		"exp_orphan.csv":         false, // finished, manifest never recorded
		".exp_fresh.csv.456.tmp": true,  // may be an export under way
	}
	for name, kept := range files {
		path := filepath.Join(exports, name)
		if name != exp.ID+".csv" {
			is.NoErr(os.WriteFile(path, []byte("x"), 0o644))
		}
		if !kept || name == exp.ID+".csv" {
			is.NoErr(os.Chtimes(path, old, old))
		}
	}
	s2, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s2.Close()
	_, _, err = s2.GetProject(ctx, "acme") // opens the project
	is.NoErr(err)
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(exports, name))
		is.Equal(err == nil, kept) // kept or swept as expected
	}
	_, f, err := s2.OpenExport(ctx, "acme", exp.ID)
	is.NoErr(err)
	f.Close()
}
