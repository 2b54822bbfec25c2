package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
)

// mirror is a downstream copy of a project kept by its change feed alone:
// each insert or update puts the change's row under its key, each delete
// removes the key, and each schema change (which logs no row) reads its
// table anew (every table for the restored database's schema change on
// table ""), as Change's doc tells a follower to.
type mirror struct {
	c      *client.Client
	tables map[string]map[string]pd.Row // lower-case table name → key → row
	last   int64                        // the last change applied
	ops    map[string]int               // changes applied, by op
	gaps   int                          // changes whose id is not last+1
	reads  int                          // tables read anew
}

func newMirror(c *client.Client) *mirror {
	return &mirror{c: c, tables: map[string]map[string]pd.Row{}, ops: map[string]int{}}
}

// mirrorKey is a map key for a primary key value, its Go type included.
func mirrorKey(v any) string {
	b, _ := json.Marshal(v)
	return fmt.Sprintf("%T:%s", v, b)
}

func (m *mirror) apply(ctx context.Context, ch pd.Change) error {
	if ch.ID <= m.last {
		return fmt.Errorf("change %d after change %d: delivered twice or out of order", ch.ID, m.last)
	}
	if ch.ID != m.last+1 {
		m.gaps++
	}
	m.last = ch.ID
	m.ops[ch.Op]++
	t := strings.ToLower(ch.Table)
	switch ch.Op {
	case pd.ChangeSchema:
		if ch.Table == "" {
			m.tables = map[string]map[string]pd.Row{}
			tables, err := m.c.ListTables(ctx, "acme")
			if err != nil {
				return err
			}
			for _, tb := range tables {
				if err := m.read(ctx, tb.Name); err != nil {
					return err
				}
			}
			return nil
		}
		return m.read(ctx, ch.Table)
	case pd.ChangeInsert, pd.ChangeUpdate:
		if m.tables[t] == nil {
			// Read anew after the table was deleted: its schema change
			// comes later and reads it again.
			m.tables[t] = map[string]pd.Row{}
		}
		m.tables[t][mirrorKey(ch.Key)] = ch.Row
	case pd.ChangeDelete:
		delete(m.tables[t], mirrorKey(ch.Key))
	default:
		return fmt.Errorf("change %d: op %q", ch.ID, ch.Op)
	}
	return nil
}

// read reads table anew, or forgets it when it is gone.
func (m *mirror) read(ctx context.Context, table string) error {
	m.reads++
	rows, err := readTable(ctx, m.c, table)
	if errors.Is(err, pd.ErrTableNotFound) {
		delete(m.tables, strings.ToLower(table))
		return nil
	}
	m.tables[strings.ToLower(table)] = rows
	return err
}

// readTable reads every row of table, by key.
func readTable(ctx context.Context, r interface {
	ListColumns(ctx context.Context, slug, table string) (string, []pd.Column, error)
}, table string) (map[string]pd.Row, error) {
	_, cols, err := r.ListColumns(ctx, "acme", table)
	if err != nil {
		return nil, err
	}
	pk := ""
	for _, col := range cols {
		if col.IsPrimary {
			pk = col.Name
		}
	}
	out := map[string]pd.Row{}
	var rows func(func(pd.Row, error) bool)
	switch r := r.(type) {
	case *client.Client:
		rows = r.Rows(ctx, "acme", table, pd.ListOptions{Limit: 1000})
	case *pd.Store:
		rows = r.Rows(ctx, "acme", table, pd.ListOptions{Limit: 1000})
	}
	for row, err := range rows {
		if err != nil {
			return nil, err
		}
		out[mirrorKey(row[pk])] = row
	}
	return out, nil
}

// sameValue compares two values of rows, floats by their bits (-0 is not 0).
func sameValue(a, b any) bool {
	fa, ok1 := a.(float64)
	fb, ok2 := b.(float64)
	if ok1 && ok2 {
		return math.Float64bits(fa) == math.Float64bits(fb)
	}
	return a == b
}

// diff describes how the mirror differs from the project's tables read
// through the Store itself; "" when it is the same.
func (m *mirror) diff(t *testing.T, s *pd.Store) string {
	t.Helper()
	tables, err := s.ListTables(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]bool{}
	for _, tb := range tables {
		name := strings.ToLower(tb.Name)
		seen[name] = true
		want, err := readTable(ctx, s, tb.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := m.tables[name]
		if !ok {
			out = append(out, fmt.Sprintf("table %s: missing from the mirror", name))
			continue
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s %s: missing from the mirror (want %v)", name, k, w))
				continue
			}
			if len(g) != len(w) {
				out = append(out, fmt.Sprintf("%s %s: mirror %v, table %v", name, k, g, w))
				continue
			}
			for col, wv := range w {
				if gv, ok := g[col]; !ok || !sameValue(gv, wv) {
					out = append(out, fmt.Sprintf("%s %s column %s: mirror %#v, table %#v", name, k, col, gv, wv))
				}
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				out = append(out, fmt.Sprintf("%s %s: in the mirror only (%v)", name, k, g))
			}
		}
	}
	for name := range m.tables {
		if !seen[name] {
			out = append(out, fmt.Sprintf("table %s: in the mirror only", name))
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… and %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// cuttingProxy is a TCP proxy to the address addr returns, which cuts
// connection n (from 0) after passing on limit(n) bytes of the server's
// answer; cuts counts the connections cut.
func cuttingProxy(t *testing.T, addr func() string, limit func(n int) int64) (url string, cuts *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cuts = new(atomic.Int64)
	go func() {
		for n := 0; ; n++ {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr())
			if err != nil {
				down.Close()
				continue
			}
			limit := limit(n)
			go func() { io.Copy(up, down); up.Close() }()
			go func() {
				if n, _ := io.CopyN(down, up, limit); n == limit {
					cuts.Add(1)
				}
				down.Close()
				up.Close()
			}()
		}
	}()
	return "http://" + ln.Addr().String(), cuts
}

// TestMirrorByTheFeed keeps a mirror of a project by its change feed alone,
// through the Go client's FollowChanges over a proxy that cuts the stream
// at random points, while a writer runs every kind of write and schema
// change through the client, some failing, some replayed under an
// Idempotency-Key, and the server restarts (Store closed, opened again on
// the same folder) midway: the mirror gets each change once, in order,
// and ends equal to every table.
func TestMirrorByTheFeed(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	store, err := pd.Open(dir, nil)
	is.NoErr(err)
	_, admin, err := store.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	var handler atomic.Value
	handler.Store(http.Handler(httpapi.New(store, &httpapi.Options{StreamPing: 20 * time.Millisecond})))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := client.New(srv.URL, admin.Token, &client.Options{MaxRetryWait: 20 * time.Millisecond})
	// Each stream is cut after a random number of bytes, growing with
	// the streams cut so that large events pass in the end.
	r := rand.New(rand.NewSource(3))
	cutURL, cuts := cuttingProxy(t, func() string { return srv.Listener.Addr().String() }, func(n int) int64 {
		return int64(300 + rand.Intn(2000<<(n%12)))
	})
	fc := client.New(cutURL, admin.Token, &client.Options{MaxRetryWait: 20 * time.Millisecond})

	m := newMirror(c)
	fctx, cancel := context.WithTimeout(ctx, 50*time.Second) // only against hanging
	defer cancel()
	var mu sync.Mutex
	followed := make(chan error, 1)
	go func() {
		for ch, err := range fc.Changes(fctx, "acme", 0) {
			if err == nil {
				mu.Lock()
				err = m.apply(fctx, ch)
				mu.Unlock()
			}
			if err != nil {
				followed <- err
				return
			}
		}
		followed <- nil
	}()

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	fails := func(err error, code pd.Code) {
		t.Helper()
		if pd.ErrorCode(err) != code {
			t.Fatalf("error %v, want %s", err, code)
		}
	}
	last := func() int64 {
		id, err := store.LastChangeID(ctx, "acme")
		must(err)
		return id
	}
	noChange := func(what string, f func()) {
		t.Helper()
		before := last()
		f()
		if after := last(); after != before {
			t.Fatalf("%s logged changes %d..%d", what, before+1, after)
		}
	}

	_, _, err = c.CreateTable(ctx, "acme", pd.TableDef{Name: "items", Columns: []pd.ColumnDef{
		{Name: "name", Unique: true, NotNull: true},
		{Name: "qty", Type: "INTEGER"},
		{Name: "price", Type: "REAL"},
		{Name: "seen", Type: "DATETIME"},
		{Name: "ok", Type: "BOOLEAN", Default: false},
		{Name: "n", Type: "NUMERIC"},
	}})
	must(err)
	_, _, err = c.CreateTable(ctx, "acme", pd.TableDef{Name: "Tags", Columns: []pd.ColumnDef{
		{Name: "code", Primary: true}, {Name: "label"},
	}})
	must(err)

	// Values of every kind.
	_, err = c.Insert(ctx, "acme", "items", []pd.Row{
		{"name": "big", "qty": int64(1<<53 + 1), "n": int64(math.MaxInt64)},
		{"name": "small", "qty": int64(math.MinInt64), "price": math.Copysign(0, -1)},
		{"name": "huge", "price": 1e308, "n": 5e-324},
		{"name": "tiny", "price": 5e-324, "n": 1.5},
		{"name": "unicode ✓ \u2028 <&> \"q\" \\ 😀", "seen": "2026-11-21T14:05:09.123Z"},
		{"name": "nulls", "qty": nil, "price": nil, "seen": nil, "n": nil},
		{"name": "bool", "ok": true, "price": 2.0, "n": "42"},
		{"name": strings.Repeat("é", 100000)},
	})
	must(err)
	_, err = c.Insert(ctx, "acme", "Tags", []pd.Row{{"code": "a", "label": "A"}, {"code": "b"}, {"code": "ü"}})
	must(err)
	if _, err := c.Insert(ctx, "acme", "items", []pd.Row{{"name": "nan", "price": math.NaN()}}); err == nil {
		t.Fatal("NaN was inserted")
	}

	// Writes that fail change nothing.
	noChange("failed writes", func() {
		_, err := c.Insert(ctx, "acme", "items", []pd.Row{{"name": "x1"}, {"name": "big"}})
		fails(err, pd.ErrUniqueViolation)
		_, err = c.Insert(ctx, "acme", "items", []pd.Row{{"name": "x2"}, {"qty": 1}})
		fails(err, pd.ErrNotNullViolation)
		_, err = c.Insert(ctx, "acme", "items", []pd.Row{{"name": "x3", "qty": "abc"}})
		fails(err, pd.ErrInvalidColumnValue)
		_, err = c.UpdateRecords(ctx, "acme", "items", pd.BulkUpdate{Data: pd.Row{"name": "same"}, AllowAll: true})
		fails(err, pd.ErrUniqueViolation)
		_, err = c.UpdateColumn(ctx, "acme", "items", "qty", pd.ColumnUpdate{Nullable: pd.SetTo(false)})
		fails(err, pd.ErrInvalidColumnChange)
		_, err = c.UpdateColumn(ctx, "acme", "items", "ok", pd.ColumnUpdate{Unique: pd.SetTo(true)})
		fails(err, pd.ErrUniqueViolation)
		_, err = c.UpdateRecord(ctx, "acme", "items", 999, pd.Row{"qty": 1})
		fails(err, pd.ErrRecordNotFound)
		_, err = c.DeleteRecord(ctx, "acme", "items", 999)
		fails(err, pd.ErrRecordNotFound)
		_, err = c.UpdateRecord(ctx, "acme", "Tags", "a", pd.Row{"code": "b"})
		fails(err, pd.ErrUniqueViolation)
	})

	// An insert under an Idempotency-Key, and its replay: one change.
	kctx := pd.WithIdempotencyKey(ctx, "mirror-1")
	first, err := c.Insert(kctx, "acme", "items", []pd.Row{{"name": "once"}, {"name": "once2"}})
	must(err)
	noChange("a replay", func() {
		again, err := c.Insert(kctx, "acme", "items", []pd.Row{{"name": "once"}, {"name": "once2"}})
		must(err)
		is.Equal(again.InsertedIDs, first.InsertedIDs)
	})

	itemKey, tagKey := "id", "code" // renamed below
	writes := func(round int) {
		for i := range 40 {
			var err error
			switch r.Intn(8) {
			case 0, 1:
				var rows []pd.Row
				for j := range 1 + r.Intn(20) {
					rows = append(rows, pd.Row{"name": fmt.Sprintf("r%d-%d-%d", round, i, j), "qty": r.Intn(5), "price": float64(r.Intn(9)) / 4})
				}
				_, err = c.Insert(ctx, "acme", "items", rows)
			case 2:
				_, err = c.UpdateRecord(ctx, "acme", "items", 1+r.Intn(60), pd.Row{"qty": r.Intn(5), "seen": "2027-01-02T03:04:05Z"})
			case 3: // moves a row to another key
				_, err = c.UpdateRecord(ctx, "acme", "items", 1+r.Intn(60), pd.Row{itemKey: 10000 + r.Intn(10000)})
			case 4:
				_, err = c.UpdateRecords(ctx, "acme", "items", pd.BulkUpdate{Data: pd.Row{"price": float64(i)}, Where: pd.Where{{Column: "qty", Op: "=", Value: r.Intn(5)}}})
			case 5:
				_, err = c.DeleteRecords(ctx, "acme", "items", pd.BulkDelete{Where: pd.Where{{Column: "qty", Op: "=", Value: r.Intn(5)}, {Column: "price", Op: "<", Value: 0.5}}})
			case 6:
				if r.Intn(2) == 0 {
					_, err = c.DeleteRecord(ctx, "acme", "items", 1+r.Intn(60))
					break
				}
				// A bulk update that moves one row to a key past 2^53, or
				// below zero.
				_, err = c.UpdateRecords(ctx, "acme", "items", pd.BulkUpdate{
					Data:  pd.Row{itemKey: int64(1<<60) + int64(r.Intn(1000)) - int64(r.Intn(2))<<61},
					Where: pd.Where{{Column: itemKey, Op: "=", Value: 1 + r.Intn(60)}},
				})
			case 7: // a text key that moves, and one set back
				if round == 3 { // Tags is gone
					continue
				}
				code := fmt.Sprint("k", r.Intn(6))
				_, err = c.Insert(ctx, "acme", "Tags", []pd.Row{{tagKey: code, "label": round}})
				if err == nil {
					_, err = c.UpdateRecord(ctx, "acme", "Tags", code, pd.Row{tagKey: code + "x"})
				}
				if err == nil && r.Intn(2) == 0 {
					_, err = c.UpdateRecord(ctx, "acme", "Tags", code+"x", pd.Row{tagKey: code, "label": nil})
				}
			}
			switch pd.ErrorCode(err) {
			case "", pd.ErrRecordNotFound, pd.ErrUniqueViolation:
			default:
				t.Fatalf("round %d write %d: %v", round, i, err)
			}
		}
	}
	writes(0)

	// Schema changes of every kind the API has.
	_, err = c.AddColumn(ctx, "acme", "items", pd.ColumnDef{Name: "color", Default: "red"})
	must(err)
	_, err = c.AddColumn(ctx, "acme", "items", pd.ColumnDef{Name: "weight", Type: "REAL"})
	must(err)
	writes(1)
	_, err = c.UpdateColumn(ctx, "acme", "items", "color", pd.ColumnUpdate{Name: pd.SetTo("colour")})
	must(err)
	_, err = c.UpdateColumn(ctx, "acme", "items", "colour", pd.ColumnUpdate{Default: pd.SetTo[any]("blue")})
	must(err)
	_, err = c.UpdateColumn(ctx, "acme", "items", "weight", pd.ColumnUpdate{Type: pd.SetTo("INTEGER")})
	must(err)
	_, err = c.UpdateColumn(ctx, "acme", "items", "qty", pd.ColumnUpdate{Default: pd.SetTo[any](7)})
	must(err)
	_, err = c.UpdateColumn(ctx, "acme", "items", "id", pd.ColumnUpdate{Name: pd.SetTo("item_id")})
	must(err)
	itemKey = "item_id"
	_, err = c.UpdateColumn(ctx, "acme", "Tags", "code", pd.ColumnUpdate{Name: pd.SetTo("tag")})
	must(err)
	tagKey = "tag"
	_, err = c.UpdateColumn(ctx, "acme", "items", "n", pd.ColumnUpdate{Nullable: pd.SetTo(false)})
	fails(err, pd.ErrInvalidColumnChange)
	_, err = c.CreateIndex(ctx, "acme", "items", pd.IndexRequest{Columns: []string{"qty", "price"}})
	must(err)
	_, err = c.CreateIndex(ctx, "acme", "items", pd.IndexRequest{Columns: []string{"colour"}, IndexName: "by_colour"})
	must(err)
	_, err = c.DropIndex(ctx, "acme", "items", "by_colour")
	must(err)

	// The server restarts: the stream ends, the client opens it again on
	// the new server.
	must(store.Close())
	store, err = pd.Open(dir, nil)
	is.NoErr(err)
	defer store.Close()
	handler.Store(http.Handler(httpapi.New(store, &httpapi.Options{StreamPing: 20 * time.Millisecond})))

	writes(2)
	_, err = c.UpdateRecords(ctx, "acme", "items", pd.BulkUpdate{Data: pd.Row{"weight": 3}, AllowAll: true})
	must(err)
	_, err = c.DeleteTable(ctx, "acme", "Tags")
	must(err)
	_, _, err = c.CreateTable(ctx, "acme", pd.TableDef{Name: "tags", Columns: []pd.ColumnDef{{Name: "v", Type: "INTEGER"}}})
	must(err)
	_, err = c.Insert(ctx, "acme", "tags", []pd.Row{{"v": 1}, {"v": 2}})
	must(err)
	_, err = c.UpdateColumn(ctx, "acme", "items", "qty", pd.ColumnUpdate{Unique: pd.SetTo(false)})
	must(err)
	_, err = c.DeleteRecords(ctx, "acme", "items", pd.BulkDelete{Where: pd.Where{{Column: "qty", Op: "is_null"}}})
	must(err)
	writes(3)
	_, err = c.DeleteRecords(ctx, "acme", "items", pd.BulkDelete{AllowAll: true, Where: pd.Where{{Column: "item_id", Op: ">", Value: 5000}}})
	must(err)

	want := last()
	deadline := time.Now().Add(40 * time.Second)
	for {
		mu.Lock()
		at := m.last
		mu.Unlock()
		if at >= want {
			break
		}
		select {
		case err := <-followed:
			t.Fatalf("the feed ended at change %d of %d: %v", at, want, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror reached change %d of %d", at, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	is.NoErr(<-followed)
	mu.Lock()
	defer mu.Unlock()
	if d := m.diff(t, store); d != "" {
		t.Fatalf("the mirror differs from the tables:\n%s", d)
	}
	is.Equal(m.gaps, 0)
	t.Logf("%d changes %v, %d tables read anew, %d streams cut", m.last, m.ops, m.reads, cuts.Load())
}
