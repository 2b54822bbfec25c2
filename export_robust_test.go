package projectdata_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// csvNull marks a field that was empty and unquoted (NULL) in parseCSV's
// records; a quoted empty field is the empty string.
const csvNull = "\x00NULL\x00"

// parseCSV parses RFC 4180 records ending in LF, keeping every byte of a
// quoted field (encoding/csv drops the CR of a CRLF inside one) and telling
// an unquoted empty field (csvNull) from a quoted one.
func parseCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	var recs [][]string
	for len(b) > 0 {
		var rec []string
		for {
			var field string
			if len(b) > 0 && b[0] == '"' {
				var sb strings.Builder
				i := 1
				for {
					if i >= len(b) {
						t.Fatalf("unterminated quoted field")
					}
					if b[i] == '"' {
						if i+1 < len(b) && b[i+1] == '"' {
							sb.WriteByte('"')
							i += 2
							continue
						}
						i++
						break
					}
					sb.WriteByte(b[i])
					i++
				}
				field, b = sb.String(), b[i:]
			} else {
				i := bytes.IndexAny(b, ",\n")
				if i < 0 {
					t.Fatalf("record without its LF")
				}
				if bytes.ContainsAny(b[:i], "\"\r") {
					t.Fatalf("unquoted field %q holds a quote or CR", b[:i])
				}
				field, b = string(b[:i]), b[i:]
				if field == "" {
					field = csvNull
				}
			}
			rec = append(rec, field)
			if len(b) == 0 {
				t.Fatalf("record without its LF")
			}
			sep := b[0]
			b = b[1:]
			if sep == '\n' {
				break
			}
			if sep != ',' {
				t.Fatalf("field followed by %q", sep)
			}
		}
		recs = append(recs, rec)
	}
	return recs
}

// csvField is how the export writes a value the Store returns.
func csvField(v any) string {
	switch v := v.(type) {
	case nil:
		return csvNull
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprintf("unexpected %T", v)
}

// TestExportRoundTripsEveryValue exports values of every type, including
// text that CSV must quote, and parses the file back: each field is the
// value the Store returns for that row and column, and NULL stays apart
// from the empty string.
func TestExportRoundTripsEveryValue(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	cols := []projectdata.ColumnDef{{Name: "t"}, {Name: "i", Type: "INTEGER"}, {Name: "r", Type: "REAL"},
		{Name: "num", Type: "NUMERIC"}, {Name: "b", Type: "BOOLEAN"}, {Name: "d", Type: "DATETIME"}}
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "v", Columns: cols})
	is.NoErr(err)
	texts := []any{nil, "", " ", "a ", " a", "\t", "a,b", `"`, `""`, "a\"b", "\r", "\n", "\r\n", "x\r\ny", `\.`,
		"\x01", "a\x7fb", "\u2028", "\u00a0lead", "\ufeffbom", "é", strings.Repeat("long,\"", 100_000), "NULL", "=1+1"}
	reals := []any{nil, 0.0, math.Copysign(0, -1), 0.1, 1e21, 1e-7, 123456789.0, math.MaxFloat64, math.SmallestNonzeroFloat64, -2.5}
	ints := []any{nil, int64(0), int64(math.MaxInt64), int64(math.MinInt64), int64(-1)}
	nums := []any{nil, "42", 1.5, int64(math.MaxInt64), "1e21", "0.1"}
	bools := []any{nil, true, false, int64(1), int64(0)}
	dates := []any{nil, "2026-11-21T14:05:09.123Z", "2026-11-21"}
	var rows []projectdata.Row
	for k := range texts {
		rows = append(rows, projectdata.Row{"t": texts[k], "i": ints[k%len(ints)], "r": reals[k%len(reals)],
			"num": nums[k%len(nums)], "b": bools[k%len(bools)], "d": dates[k%len(dates)]})
	}
	_, err = s.Insert(ctx, "acme", "v", rows)
	is.NoErr(err)

	e, err := s.CreateExport(ctx, "acme", "v", "csv")
	is.NoErr(err)
	data, err := os.ReadFile(exportPath(dir, e.ID))
	is.NoErr(err)
	is.Equal(int64(len(data)), e.SizeBytes)
	recs := parseCSV(t, data)
	is.Equal(recs[0], []string{"id", "t", "i", "r", "num", "b", "d"})
	n := 0
	for row, err := range s.Rows(ctx, "acme", "v", projectdata.ListOptions{}) {
		is.NoErr(err)
		n++
		rec := recs[n]
		for j, col := range recs[0] {
			if want := csvField(row[col]); rec[j] != want {
				t.Errorf("row %v column %s: field %.60q, want %.60q (value %T)", row["id"], col, rec[j], want, row[col])
			}
		}
	}
	is.Equal(n, len(texts))
	is.Equal(len(recs), n+1)
	is.Equal(e.RowCount, int64(n))
}

// exportPath is the path of a table export's file in project acme.
func exportPath(dir, id string) string { return dir + "/acme/exports/" + id + ".csv" }

// TestExportSnapshotUnderWritesAndSchemaChanges exports a table while
// transfers (which keep the sum of bal), inserts and deletes commit and
// columns are added and rebuilt: every export is one moment of the table
// (the sum holds, ids are unique and ordered, each record has the header's
// fields) and its manifest describes its file.
func TestExportSnapshotUnderWritesAndSchemaChanges(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "acct", Columns: []projectdata.ColumnDef{{Name: "bal", Type: "INTEGER"}, {Name: "tag"}}})
	is.NoErr(err)
	const accounts, total = 200, 200 * 100
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), fmt.Sprintf(`INSERT INTO acct (id, bal, tag) SELECT value, 100, 't' || value FROM generate_series(1, %d)`, accounts))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr, serr error
	raw := pdtest.Raw(t, dir, "acme")
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a, b := 1+i%accounts, 1+(i*7+3)%accounts
			werr = raw.Exec(fmt.Sprintf(`BEGIN IMMEDIATE;
				UPDATE acct SET bal = bal - 5 WHERE id = %d; UPDATE acct SET bal = bal + 5 WHERE id = %d;
				INSERT INTO acct (bal, tag) VALUES (0, 'new%d');
				DELETE FROM acct WHERE id = (SELECT min(id) FROM acct WHERE id > %d AND bal = 0);
				COMMIT`, a, b, i, accounts))
			if werr != nil {
				return
			}
		}
	})
	wg.Go(func() {
		for i := 0; i < 6; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, serr = s.AddColumn(ctx, "acme", "acct", projectdata.ColumnDef{Name: fmt.Sprintf("c%d", i), Default: "x"}); serr != nil {
				return
			}
			// A rebuild of the whole table, in one transaction.
			if _, serr = s.UpdateColumn(ctx, "acme", "acct", "tag", projectdata.ColumnUpdate{Unique: projectdata.SetTo(i%2 == 0)}); serr != nil {
				return
			}
		}
	})
	for range 12 {
		e, err := s.CreateExport(ctx, "acme", "acct", "csv")
		is.NoErr(err)
		data, err := os.ReadFile(exportPath(dir, e.ID))
		is.NoErr(err)
		sum := sha256.Sum256(data)
		is.Equal(int64(len(data)), e.SizeBytes)
		is.Equal(hex.EncodeToString(sum[:]), e.SHA256)
		recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll() // every record has the header's fields
		is.NoErr(err)
		is.Equal(recs[0][:3], []string{"id", "bal", "tag"})
		is.Equal(int64(len(recs)-1), e.RowCount)
		bal, last := 0, int64(0)
		for _, rec := range recs[1:] {
			id, err := strconv.ParseInt(rec[0], 10, 64)
			is.NoErr(err)
			is.True(id > last) // unique, in key order
			last = id
			v, err := strconv.Atoi(rec[1])
			is.NoErr(err)
			bal += v
			for _, f := range rec[3:] {
				is.Equal(f, "x") // an added column holds its default in every row
			}
		}
		is.Equal(bal, total)
	}
	close(stop)
	wg.Wait()
	is.NoErr(werr)
	is.NoErr(serr)
}

// TestExpiredExportWhoseFileCannotBeRemoved: an expired export whose file
// the Store cannot remove (here a folder put in its place) still becomes
// not_found (expired), and neither listing, deleting the not-found exports
// nor downloading it fails for it.
func TestExpiredExportWhoseFileCannotBeRemoved(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	e := f.export(t)
	path := f.file(e.ID)
	is.NoErr(os.Remove(path))
	is.NoErr(os.MkdirAll(path+"/inside", 0o755))
	f.clock.Advance(exportWeek)

	_, _, err := f.s.OpenExport(ctx, "acme", e.ID)
	pdtest.Code(t, err, projectdata.ErrExportNotFound)
	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(page.Exports[0].Status, projectdata.ExportStatusNotFound)
	is.Equal(*page.Exports[0].StatusReason, projectdata.ExportReasonExpired)
	n, err := f.s.DeleteNotFoundExports(ctx, "acme")
	is.NoErr(err)
	is.Equal(n, 1)
}

// TestListExportsWithALinkLoopInPlaceOfAFile: a file replaced by a
// symbolic link that loops fails neither the listing nor the deletion of
// not-found exports, and its download is 404 file_changed, as for any link.
func TestListExportsWithALinkLoopInPlaceOfAFile(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	e := f.export(t)
	other := f.export(t)
	path := f.file(e.ID)
	is.NoErr(os.Remove(path))
	is.NoErr(os.Symlink(path, path)) // a link to itself

	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{})
	is.NoErr(err)
	is.Equal(page.Total, 2)
	_, err = f.s.DeleteNotFoundExports(ctx, "acme")
	is.NoErr(err)
	_, _, err = f.s.OpenExport(ctx, "acme", e.ID)
	pdtest.Code(t, err, projectdata.ErrExportNotFound)
	page, err = f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: projectdata.ExportStatusNotFound})
	is.NoErr(err)
	is.Equal(len(page.Exports), 1)
	is.Equal(*page.Exports[0].StatusReason, projectdata.ExportReasonFileChanged)
	_, file, err := f.s.OpenExport(ctx, "acme", other.ID)
	is.NoErr(err)
	file.Close()
}

// TestExportsFolderReplacedByAFile: with a file in place of a project's
// exports folder, downloading, listing and deleting the exports not found
// work, and the exports are not_found (file_missing): the path failed
// with "not a directory", an internal error for every export of the
// project.
func TestExportsFolderReplacedByAFile(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	e := f.export(t)
	other := f.export(t)
	dir := filepath.Dir(f.file(e.ID))
	is.NoErr(os.RemoveAll(dir))
	is.NoErr(os.WriteFile(dir, []byte("x"), 0o644))

	_, _, err := f.s.OpenExport(ctx, "acme", e.ID)
	pdtest.Code(t, err, projectdata.ErrExportNotFound)
	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: projectdata.ExportStatusNotFound})
	is.NoErr(err)
	is.Equal(len(page.Exports), 2) // other by the listing
	for _, x := range page.Exports {
		is.Equal(*x.StatusReason, projectdata.ExportReasonFileMissing)
	}
	deleted, err := f.s.DeleteNotFoundExports(ctx, "acme")
	is.NoErr(err)
	is.Equal(deleted, 2)
	_, _, err = f.s.OpenExport(ctx, "acme", other.ID)
	pdtest.Code(t, err, projectdata.ErrExportNotFound)
}
