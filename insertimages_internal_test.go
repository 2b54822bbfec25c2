package projectdata

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

var updateImages = flag.Bool("update-images", false, "rewrite testdata/insert_images.golden")

// imagesStore opens a Store with two tables whose keys are not their first
// column: mixed (an INTEGER key, defaults of every kind, a nullable column
// without one) and coded (a TEXT key, last).
func imagesStore(tb testing.TB, opts *Options) *Store {
	tb.Helper()
	s, err := Open(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		tb.Fatal(err)
	}
	for _, def := range []TableDef{
		{Name: "mixed", Columns: []ColumnDef{
			{Name: "name"}, {Name: "id", Type: TypeInteger, Primary: true},
			{Name: "note", Default: "say \"hi\"\n<b>&"}, {Name: "qty", Type: TypeInteger, Default: 1},
			{Name: "price", Type: TypeReal, Default: 2.5}, {Name: "ratio", Type: TypeReal},
			{Name: "ok", Type: TypeBoolean, Default: true}, {Name: "num", Type: TypeNumeric, Default: 7},
		}},
		{Name: "coded", Columns: []ColumnDef{
			{Name: "label"}, {Name: "n", Type: TypeInteger, Default: 3}, {Name: "code", Primary: true},
		}},
	} {
		if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// imageInserts are inserts whose row images cover what an image holds:
// assigned and given keys, defaults, NULLs given and taken, strings that
// JSON escapes, floats, several statements of one insert, and rows large
// enough to split an insert's images into several records.
func imageInserts() []struct {
	table string
	rows  []Row
} {
	odd := []string{`"quoted" \back\slash`, "<a href='x'>&amp;</a>", "\x01\b\f\n\r\t\x1f\x7f", "line\u2028sep\u2029", "é日本🎉", ""}
	var many []Row // 70 rows: chunks of 32 and rows going in alone
	for i := range 70 {
		row := Row{"name": odd[i%len(odd)] + fmt.Sprint(i), "price": float64(i) + 0.25, "ratio": 1e21 * float64(i)}
		if i%9 == 4 {
			row = Row{"id": 1000 + i, "note": nil}
		}
		many = append(many, row)
	}
	big := strings.Repeat("big <&> ", maxChangeRecordBytes/8/3)
	var large []Row // past maxChangeRecordBytes: split
	for i := range 8 {
		large = append(large, Row{"name": big + fmt.Sprint(i), "qty": i})
	}
	return []struct {
		table string
		rows  []Row
	}{
		{"mixed", []Row{{"name": "a"}}},
		{"mixed", []Row{{"id": 100, "name": "given"}}},
		{"mixed", []Row{
			{"name": "x", "price": 3},
			{"name": nil, "ratio": 1e21, "ok": false},
			{"id": 200, "note": odd[3] + odd[4]},
			{"qty": int64(-9223372036854775808), "price": 0.1, "ratio": math.Copysign(0, -1), "num": 1.5},
			{},
			{"note": nil, "price": nil, "num": "12"},
		}},
		{"mixed", many},
		{"coded", []Row{{"code": "k1"}, {"code": odd[0], "label": odd[2], "n": nil}, {"label": "x", "code": odd[1]}}},
		{"mixed", large},
		{"coded", []Row{{"code": "one"}}},
	}
}

// insertRecords returns the insert records of the log, one line each:
// id, count, table and data (its length and hash when large).
func insertRecords(tb testing.TB, s *Store) []string {
	tb.Helper()
	ctx := context.Background()
	var lines []string
	err := s.withProject(ctx, "acme", "", func(p *project) error {
		return p.read(ctx, func(c *conn) error {
			return c.query(`SELECT last_id, count, table_name, data FROM _pd_changes WHERE op = 'insert' ORDER BY last_id`, nil, func(st *sqlite3.Stmt) error {
				data := st.ColumnText(3)
				if len(data) > 4096 {
					data = fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256([]byte(data)))
				}
				lines = append(lines, fmt.Sprintf("%d %d %s %s", st.ColumnInt64(0), st.ColumnInt64(1), st.ColumnText(2), data))
				return nil
			})
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return lines
}

// TestInsertImagesAsBefore: the row images of inserts are byte for byte
// those the change log wrote before they were encoded ahead of the writer
// (testdata/insert_images.golden, written by that code).
func TestInsertImagesAsBefore(t *testing.T) {
	is := is.New(t)
	s := imagesStore(t, nil)
	for _, in := range imageInserts() {
		_, err := s.Insert(context.Background(), "acme", in.table, in.rows)
		is.NoErr(err)
	}
	got := strings.Join(insertRecords(t, s), "\n") + "\n"
	const golden = "testdata/insert_images.golden"
	if *updateImages {
		is.NoErr(os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err)
	is.Equal(got, string(want))
}

// insertWith inserts rows into table of s's project acme as Store.insert
// does, the plan made early (encoding its images) or, when early is false,
// in the writer (encoding them there). It fails when the early plan was
// not made with its images, or when those of concurrentImageRows rows or
// more were not encoded in a goroutine of their own.
func insertWith(tb testing.TB, s *Store, table string, rows []Row, early bool) InsertResult {
	tb.Helper()
	ctx := context.Background()
	plan := func(t *tableInfo) (*insertPlan, error) { return planInsert(t, rows) }
	var res InsertResult
	err := s.withProject(ctx, "acme", "", func(p *project) error {
		var pl *insertPlan
		if early {
			if pl = p.planEarly(table, plan); pl == nil {
				return fmt.Errorf("no early plan for %s", table)
			}
			if concurrent := len(rows) >= concurrentImageRows; (pl.imagesDone != nil) != concurrent {
				return fmt.Errorf("images of %d rows encoded concurrently: %v", len(rows), !concurrent)
			}
		}
		err := p.write(ctx, func(c *conn) (err error) {
			res, err = p.insertPlanned(ctx, c, table, pl, plan)
			return err
		})
		if err == nil && pl != nil && pl.images == nil {
			return fmt.Errorf("early plan of %d rows without images", len(rows))
		}
		if pl != nil {
			pl.releaseImages()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// TestInsertImagesEarlyOrInWriter: the change-log records of inserts whose
// images were encoded early, before the writer, are byte for byte those of
// the same inserts whose images the writer encoded (a plan made there).
func TestInsertImagesEarlyOrInWriter(t *testing.T) {
	is := is.New(t)
	stores := [2]*Store{imagesStore(t, nil), imagesStore(t, nil)}
	for _, s := range stores {
		_, err := s.ListTables(context.Background(), "acme") // the registry is cached: early plans can be made
		is.NoErr(err)
	}
	for _, in := range imageInserts() {
		a := insertWith(t, stores[0], in.table, in.rows, true)
		b := insertWith(t, stores[1], in.table, in.rows, false)
		is.Equal(a, b)
	}
	early, inWriter := insertRecords(t, stores[0]), insertRecords(t, stores[1])
	is.Equal(len(early), 10) // the large rows in several records
	is.Equal(early, inWriter)
}

// TestInsertImagesOfPlanMadeBeforeSchemaChange: an insert planned early
// whose table changes (a column added, a default changed) before the
// writer runs it is planned and encoded again: its images are its rows as
// stored, with the new column and the new default.
func TestInsertImagesOfPlanMadeBeforeSchemaChange(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := imagesStore(t, nil)
	_, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	rows := []Row{{"name": "a"}, {"id": 50, "qty": 2}}
	plan := func(t *tableInfo) (*insertPlan, error) { return planInsert(t, rows) }
	var res InsertResult
	is.NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		early := p.planEarly("mixed", plan)
		is.True(early != nil && early.images != nil)
		_, err := s.AddColumn(ctx, "acme", "mixed", ColumnDef{Name: "extra", Type: TypeReal, Default: 0.5})
		is.NoErr(err)
		_, err = s.UpdateColumn(ctx, "acme", "mixed", "note", ColumnUpdate{Default: SetTo[any]("later")})
		is.NoErr(err)
		return p.write(ctx, func(c *conn) (err error) {
			res, err = p.insertPlanned(ctx, c, "mixed", early, plan)
			return err
		})
	}))
	page, err := s.ListChanges(ctx, "acme", ChangeQuery{Limit: 100})
	is.NoErr(err)
	var inserts []Change
	for _, ch := range page.Changes {
		if ch.Op == ChangeInsert {
			inserts = append(inserts, ch)
		}
	}
	is.Equal(len(inserts), 2)
	for i, ch := range inserts {
		is.Equal(ch.Key, res.InsertedIDs[i])
		row, err := s.GetRecord(ctx, "acme", "mixed", ch.Key)
		is.NoErr(err)
		is.Equal(ch.Row, row) // the image is the row as stored
		is.Equal(ch.Row["extra"], 0.5)
		is.Equal(ch.Row["note"], "later")
	}
}
