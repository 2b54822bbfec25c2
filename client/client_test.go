package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var ctx = context.Background()

// API is the part of the Store's API the scenarios use: the Store and the
// Client both have it, with the same signatures.
type API interface {
	GetProject(ctx context.Context, slug string) (pd.Project, int, error)
	RenameProject(ctx context.Context, slug, name string) (pd.Project, error)
	ListTokens(ctx context.Context, slug string) ([]pd.Token, error)
	Tokens(ctx context.Context, slug string) func(func(pd.Token, error) bool)
	RevokeToken(ctx context.Context, slug string, id int64) (pd.Token, error)
	ListTables(ctx context.Context, slug string) ([]pd.Table, error)
	GetTable(ctx context.Context, slug, table string) (pd.Table, error)
	CreateTable(ctx context.Context, slug string, def pd.TableDef) (pd.Table, []pd.Column, error)
	UpdateTable(ctx context.Context, slug, table string, upd pd.TableUpdate) (pd.Table, error)
	DeleteTable(ctx context.Context, slug, table string) (string, error)
	ListColumns(ctx context.Context, slug, table string) (string, []pd.Column, error)
	GetColumn(ctx context.Context, slug, table, column string) (pd.Column, error)
	AddColumn(ctx context.Context, slug, table string, def pd.ColumnDef) (pd.Column, error)
	UpdateColumn(ctx context.Context, slug, table, column string, upd pd.ColumnUpdate) (pd.Column, error)
	Insert(ctx context.Context, slug, table string, rows []pd.Row) (pd.InsertResult, error)
	InsertJSON(ctx context.Context, slug, table string, r io.Reader) (pd.InsertResult, error)
	ListRecords(ctx context.Context, slug, table string, opts pd.ListOptions) (pd.RecordList, error)
	GetRecord(ctx context.Context, slug, table string, id any) (pd.Row, error)
	FindRecord(ctx context.Context, slug, table string, id any) (pd.Record, error)
	UpdateRecord(ctx context.Context, slug, table string, id any, data pd.Row) (pd.Row, error)
	UpdateFoundRecord(ctx context.Context, slug, table string, id any, data pd.Row) (pd.Record, error)
	DeleteRecord(ctx context.Context, slug, table string, id any) (pd.DeleteResult, error)
	UpdateRecords(ctx context.Context, slug, table string, upd pd.BulkUpdate) (pd.BulkResult, error)
	DeleteRecords(ctx context.Context, slug, table string, del pd.BulkDelete) (pd.BulkResult, error)
	Query(ctx context.Context, slug string, req pd.QueryRequest) (pd.QueryResult, error)
	ListIndexes(ctx context.Context, slug, table string) (string, []pd.Index, error)
	CreateIndex(ctx context.Context, slug, table string, req pd.IndexRequest) (pd.Index, error)
	DropIndex(ctx context.Context, slug, table, index string) (string, error)
	ListExports(ctx context.Context, slug string, q pd.ExportQuery) (pd.ExportPage, error)
	CreateProjectExport(ctx context.Context, slug string) (pd.Export, error)
	DeleteNotFoundExports(ctx context.Context, slug string) (int, error)
	ListChanges(ctx context.Context, slug string, q pd.ChangeQuery) (pd.ChangePage, error)
	FollowChanges(ctx context.Context, slug string, q pd.ChangeQuery) func(func(pd.Change, error) bool)
	Rows(ctx context.Context, slug, table string, opts pd.ListOptions) func(func(pd.Row, error) bool)
}

// storeAPI adapts the named iterator types (FollowChanges, Rows, Tokens); every other method
// is the Store's own.
type storeAPI struct{ *pd.Store }

func (s storeAPI) FollowChanges(ctx context.Context, slug string, q pd.ChangeQuery) func(func(pd.Change, error) bool) {
	return s.Store.FollowChanges(ctx, slug, q)
}

func (s storeAPI) Rows(ctx context.Context, slug, table string, opts pd.ListOptions) func(func(pd.Row, error) bool) {
	return s.Store.Rows(ctx, slug, table, opts)
}

func (s storeAPI) Tokens(ctx context.Context, slug string) func(func(pd.Token, error) bool) {
	return s.Store.Tokens(ctx, slug)
}

type clientAPI struct{ *client.Client }

func (c clientAPI) Tokens(ctx context.Context, slug string) func(func(pd.Token, error) bool) {
	return c.Client.Tokens(ctx, slug)
}

func (c clientAPI) Rows(ctx context.Context, slug, table string, opts pd.ListOptions) func(func(pd.Row, error) bool) {
	return c.Client.Rows(ctx, slug, table, opts)
}

func (c clientAPI) FollowChanges(ctx context.Context, slug string, q pd.ChangeQuery) func(func(pd.Change, error) bool) {
	return c.Client.FollowChanges(ctx, slug, q)
}

var (
	_ API = storeAPI{}
	_ API = clientAPI{}
)

// pair is a Store used directly and a Client of another Store (same clock,
// same history) served by httpapi over loopback HTTP.
func pair(t *testing.T, wrap func(http.Handler) http.Handler) (direct API, remote API, srv *httptest.Server) {
	start := time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC)
	s1, _ := pdtest.NewProject(t, &pd.Options{Now: pdtest.NewClock(start).Now})
	s2, admin := pdtest.NewProject(t, &pd.Options{Now: pdtest.NewClock(start).Now})
	var h http.Handler = httpapi.New(s2, nil)
	if wrap != nil {
		h = wrap(h)
	}
	srv = httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return storeAPI{s1}, clientAPI{client.New(srv.URL, admin, nil)}, srv
}

func text(s string) *string { return &s }

// scenarios run in order, each through the Store and through the Client.
var scenarios = []struct {
	name string
	run  func(a API) (any, error)
}{
	{"create table", func(a API) (any, error) {
		t, cols, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "orders", DisplayName: text("Orders"), Columns: []pd.ColumnDef{
			{Name: "item", NotNull: true}, {Name: "qty", Type: pd.TypeInteger, Default: int64(1)}, {Name: "price", Type: pd.TypeReal},
			{Name: "sku", Unique: true}}})
		return []any{t, cols}, err
	}},
	{"create table that exists", func(a API) (any, error) {
		t, cols, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "orders", Columns: []pd.ColumnDef{{Name: "x"}}})
		return []any{t, cols}, err
	}},
	{"insert", func(a API) (any, error) {
		return a.Insert(ctx, "acme", "orders", []pd.Row{{"item": "apple", "qty": 3, "price": 0.5, "sku": "A-1"}, {"item": "pear"}, {"item": "fig", "qty": "12", "price": "2.25"}})
	}},
	{"insert a duplicate", func(a API) (any, error) {
		return a.Insert(ctx, "acme", "orders", []pd.Row{{"item": "x", "sku": "A-1"}})
	}},
	{"insert without a required column", func(a API) (any, error) { return a.Insert(ctx, "acme", "orders", []pd.Row{{"qty": 1}}) }},
	{"insert into a missing table", func(a API) (any, error) { return a.Insert(ctx, "acme", "nope", []pd.Row{{"a": 1}}) }},
	{"insert json", func(a API) (any, error) {
		return a.InsertJSON(ctx, "acme", "orders", strings.NewReader(`[{"item":"kiwi","qty":2,"price":1.5},{"item":"lime","sku":"L<1>"}]`))
	}},
	{"insert json of one row", func(a API) (any, error) {
		return a.InsertJSON(ctx, "acme", "orders", strings.NewReader(`{"item":"plum"}`))
	}},
	{"insert json that is cut", func(a API) (any, error) {
		return a.InsertJSON(ctx, "acme", "orders", strings.NewReader(`[{"item":`))
	}},
	{"get table", func(a API) (any, error) { return a.GetTable(ctx, "acme", "ORDERS") }},
	{"get table by id", func(a API) (any, error) { return a.GetTable(ctx, "acme", "1") }},
	{"get a missing table", func(a API) (any, error) { return a.GetTable(ctx, "acme", "nope") }},
	{"list with where, order and columns", func(a API) (any, error) {
		return a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Where: pd.Where{{Column: "qty", Op: pd.WhereGe, Value: 2}}, Order: "-qty", Columns: []string{"id", "item", "qty"}, Count: "exact"})
	}},
	{"list a page and the next", func(a API) (any, error) {
		first, err := a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Limit: 2, Order: "item"})
		if err != nil {
			return nil, err
		}
		next, err := a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Limit: 2, Order: "item", After: first.NextCursor})
		first.NextCursor, next.NextCursor = "", "" // sealed with each Store's own key
		return []any{first, next}, err
	}},
	{"rows page by page", func(a API) (any, error) {
		var rows []pd.Row
		for row, err := range a.Rows(ctx, "acme", "orders", pd.ListOptions{Limit: 1, Order: "-item"}) {
			if err != nil {
				return rows, err
			}
			rows = append(rows, row)
		}
		return rows, nil
	}},
	{"rows of a missing table", func(a API) (any, error) {
		for _, err := range a.Rows(ctx, "acme", "nope", pd.ListOptions{}) {
			return nil, err
		}
		return nil, nil
	}},
	{"list with a bad cursor", func(a API) (any, error) {
		return a.ListRecords(ctx, "acme", "orders", pd.ListOptions{After: "garbage"})
	}},
	{"list with a bad where", func(a API) (any, error) {
		return a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Where: pd.Where{{Column: "nope", Op: pd.WhereEq, Value: 1}}})
	}},
	{"list where a nil value is null", func(a API) (any, error) {
		return a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Where: pd.Where{{Column: "price", Op: pd.WhereEq, Value: nil}}, Columns: []string{"item"}})
	}},
	{"list where a nil value is not null", func(a API) (any, error) {
		return a.ListRecords(ctx, "acme", "orders", pd.ListOptions{Where: pd.Where{{Column: "price", Op: "!=", Value: nil}}, Columns: []string{"item"}})
	}},
	{"add a column with a default no column takes", func(a API) (any, error) {
		return a.AddColumn(ctx, "acme", "orders", pd.ColumnDef{Name: "b", Default: []byte("hi")})
	}},
	{"add a column with a default past int64", func(a API) (any, error) {
		return a.AddColumn(ctx, "acme", "orders", pd.ColumnDef{Name: "u", Type: pd.TypeInteger, Default: uint64(math.MaxUint64)})
	}},
	{"change a default to one no column takes", func(a API) (any, error) {
		return a.UpdateColumn(ctx, "acme", "orders", "price", pd.ColumnUpdate{Default: pd.SetTo[any](math.NaN())})
	}},
	{"create a table with a default of invalid UTF-8", func(a API) (any, error) {
		t, cols, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "bad", Columns: []pd.ColumnDef{{Name: "s", Default: "\xff"}}})
		return []any{t, cols}, err
	}},
	{"get a table without a name", func(a API) (any, error) { return a.GetTable(ctx, "acme", "") }},
	{"list the columns of a table without a name", func(a API) (any, error) {
		name, cols, err := a.ListColumns(ctx, "acme", "")
		return []any{name, cols}, err
	}},
	{"insert into a table without a name", func(a API) (any, error) { return a.Insert(ctx, "acme", "", []pd.Row{{"a": 1}}) }},
	{"list the rows of a table without a name", func(a API) (any, error) { return a.ListRecords(ctx, "acme", "", pd.ListOptions{}) }},
	{"get a column without a name", func(a API) (any, error) { return a.GetColumn(ctx, "acme", "orders", "") }},
	{"change a column without a name", func(a API) (any, error) {
		return a.UpdateColumn(ctx, "acme", "orders", "", pd.ColumnUpdate{Nullable: pd.SetTo(true)})
	}},
	{"drop an index without a name", func(a API) (any, error) { return a.DropIndex(ctx, "acme", "orders", "") }},
	{"get record", func(a API) (any, error) { return a.GetRecord(ctx, "acme", "orders", 1) }},
	{"find record", func(a API) (any, error) { return a.FindRecord(ctx, "acme", "ORDERS", "2") }},
	{"get a missing record", func(a API) (any, error) { return a.GetRecord(ctx, "acme", "orders", 99) }},
	{"update record", func(a API) (any, error) {
		return a.UpdateRecord(ctx, "acme", "orders", 2, pd.Row{"qty": 7, "price": 1.25})
	}},
	{"update found record", func(a API) (any, error) {
		return a.UpdateFoundRecord(ctx, "acme", "ORDERS", "1", pd.Row{"qty": 4})
	}},
	{"update a missing record", func(a API) (any, error) {
		return a.UpdateFoundRecord(ctx, "acme", "orders", 99, pd.Row{"qty": 4})
	}},
	{"update records", func(a API) (any, error) {
		return a.UpdateRecords(ctx, "acme", "orders", pd.BulkUpdate{Data: pd.Row{"price": 9.5}, Where: pd.Where{{Column: "item", Op: pd.WhereEq, Value: "fig"}}})
	}},
	{"update records without where", func(a API) (any, error) {
		return a.UpdateRecords(ctx, "acme", "orders", pd.BulkUpdate{Data: pd.Row{"price": 9.5}})
	}},
	{"query", func(a API) (any, error) {
		r, err := a.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT item, qty FROM orders WHERE qty > ? ORDER BY id", Args: []any{1}})
		r.DurationMS = 0
		return r, err
	}},
	{"query named", func(a API) (any, error) {
		r, err := a.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT count(*) AS n FROM orders WHERE item = :item", Named: map[string]any{"item": "pear"}})
		r.DurationMS = 0
		return r, err
	}},
	{"query with both kinds of params", func(a API) (any, error) {
		r, err := a.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT ? AS a", Args: []any{1}, Named: map[string]any{"x": 2}})
		return r.Rows, err
	}},
	{"query that writes", func(a API) (any, error) { return a.Query(ctx, "acme", pd.QueryRequest{SQL: "DELETE FROM orders"}) }},
	{"add column", func(a API) (any, error) {
		return a.AddColumn(ctx, "acme", "orders", pd.ColumnDef{Name: "note", Default: "none"})
	}},
	{"update column", func(a API) (any, error) {
		return a.UpdateColumn(ctx, "acme", "orders", "note", pd.ColumnUpdate{Name: pd.SetTo("remark")})
	}},
	{"get column", func(a API) (any, error) { return a.GetColumn(ctx, "acme", "orders", "remark") }},
	{"get a missing column", func(a API) (any, error) { return a.GetColumn(ctx, "acme", "orders", "note") }},
	{"list columns", func(a API) (any, error) {
		t, cols, err := a.ListColumns(ctx, "acme", "orders")
		return []any{t, cols}, err
	}},
	{"update table", func(a API) (any, error) {
		return a.UpdateTable(ctx, "acme", "orders", pd.TableUpdate{DisplayName: pd.SetTo[*string](nil)})
	}},
	{"create index", func(a API) (any, error) {
		return a.CreateIndex(ctx, "acme", "orders", pd.IndexRequest{Columns: []string{"qty", "item"}})
	}},
	{"list indexes", func(a API) (any, error) {
		t, idx, err := a.ListIndexes(ctx, "acme", "orders")
		return []any{t, idx}, err
	}},
	{"drop a missing index", func(a API) (any, error) { return a.DropIndex(ctx, "acme", "orders", "nope") }},
	{"delete record", func(a API) (any, error) { return a.DeleteRecord(ctx, "acme", "orders", 3) }},
	{"delete records", func(a API) (any, error) {
		return a.DeleteRecords(ctx, "acme", "orders", pd.BulkDelete{Where: pd.Where{{Column: "item", Op: pd.WhereEq, Value: "pear"}}})
	}},
	{"list changes", func(a API) (any, error) {
		return a.ListChanges(ctx, "acme", pd.ChangeQuery{Tables: []string{"orders"}})
	}},
	{"follow changes", func(a API) (any, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var got []pd.Change
		for ch, err := range a.FollowChanges(ctx, "acme", pd.ChangeQuery{After: 2}) {
			if err != nil {
				return got, err
			}
			if got = append(got, ch); len(got) == 3 {
				break
			}
		}
		return got, nil
	}},
	{"list exports", func(a API) (any, error) { return a.ListExports(ctx, "acme", pd.ExportQuery{}) }},
	{"delete not found exports", func(a API) (any, error) { return a.DeleteNotFoundExports(ctx, "acme") }},
	{"list tables", func(a API) (any, error) { return a.ListTables(ctx, "acme") }},
	{"list tokens", func(a API) (any, error) {
		toks, err := a.ListTokens(ctx, "acme")
		for i := range toks {
			toks[i].LastUsedAt = nil // the client uses its token, the Store does not
		}
		return toks, err
	}},
	{"iterate over tokens", func(a API) (any, error) {
		var toks []pd.Token
		for tok, err := range a.Tokens(ctx, "acme") {
			if err != nil {
				return toks, err
			}
			tok.LastUsedAt = nil // the client uses its token, the Store does not
			toks = append(toks, tok)
		}
		return toks, nil
	}},
	{"iterate over the tokens of a missing project", func(a API) (any, error) {
		pairs := 0
		for _, err := range a.Tokens(ctx, "nope") {
			if pairs++; err != nil {
				return pairs, err
			}
		}
		return pairs, nil
	}},
	{"revoke a missing token", func(a API) (any, error) { return a.RevokeToken(ctx, "acme", 99) }},
	{"rename project", func(a API) (any, error) { return a.RenameProject(ctx, "acme", "Acme Inc") }},
	{"get project", func(a API) (any, error) {
		p, n, err := a.GetProject(ctx, "acme")
		return []any{p, n}, err
	}},
	{"get a missing project", func(a API) (any, error) {
		p, n, err := a.GetProject(ctx, "nope")
		return []any{p, n}, err
	}},
	{"delete table", func(a API) (any, error) { return a.DeleteTable(ctx, "acme", "orders") }},
	{"delete a missing table", func(a API) (any, error) { return a.DeleteTable(ctx, "acme", "orders") }},
}

// TestClientAndStoreAgree runs every scenario through the Store and
// through the Client over HTTP: same results, same errors.
func TestClientAndStoreAgree(t *testing.T) {
	direct, remote, _ := pair(t, nil)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			want, wantErr := sc.run(direct)
			got, gotErr := sc.run(remote)
			is.Equal(pd.ErrorCode(gotErr), pd.ErrorCode(wantErr)) // same error code
			if wantErr != nil {
				is.Equal(gotErr.Error(), wantErr.Error())                  // same message
				is.True(errors.Is(gotErr, pd.ErrorCode(wantErr)))          // errors.Is holds over HTTP
				is.True(errors.Is(gotErr, pd.Code(pd.ErrorCode(wantErr)))) // with the sentinel
			}
			is.Equal(got, want) // same result
		})
	}
}

// flaky answers the first sending of each write (method, path and body),
// or of each request when reads is set, as told: 503 with Retry-After, or
// by serving it and then cutting the connection before the answer (the
// write happened, the client never heard). It counts the sendings of each
// write by Idempotency-Key.
type flaky struct {
	h     http.Handler
	mode  string
	reads bool

	mu   sync.Mutex
	sent map[string]int // by method, path and body
	seen map[string]int // by Idempotency-Key
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	write := r.Method != http.MethodGet
	f.mu.Lock()
	f.sent[r.Method+" "+r.URL.Path+" "+string(body)]++
	first := f.sent[r.Method+" "+r.URL.Path+" "+string(body)] == 1
	if write {
		f.seen[r.Header.Get("Idempotency-Key")]++
	}
	f.mu.Unlock()
	if !(write || f.reads) || !first {
		f.h.ServeHTTP(w, r)
		return
	}
	switch f.mode {
	case "503":
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"ok":false,"data":null,"error":{"code":"server_busy","message":"busy"},"request_id":"req_x","meta":{"generated_at":"2026-11-21T14:05:09.123Z"}}`))
	case "cut":
		f.h.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

func TestWritesAreRetriedWithOneIdempotencyKey(t *testing.T) {
	for _, mode := range []string{"503", "cut"} {
		t.Run(mode, func(t *testing.T) {
			is := is.New(t)
			f := &flaky{mode: mode, sent: map[string]int{}, seen: map[string]int{}}
			_, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
			_, _, err := remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
			is.NoErr(err)
			res, err := remote.Insert(ctx, "acme", "t", []pd.Row{{"v": "once"}})
			is.NoErr(err)
			is.Equal(res.InsertedCount, 1)
			list, err := remote.ListRecords(ctx, "acme", "t", pd.ListOptions{})
			is.NoErr(err)
			is.Equal(len(list.Rows), 1) // applied once, though sent twice
			f.mu.Lock()
			defer f.mu.Unlock()
			is.Equal(len(f.seen), 2) // two writes, each with its own key
			for key, n := range f.seen {
				is.True(key != "") // writes carry an Idempotency-Key
				is.Equal(n, 2)     // each write: one failure, one retry with the same key
			}
		})
	}
}

func TestRetriesAreBounded(t *testing.T) {
	is := is.New(t)
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"ok":false,"data":null,"error":{"code":"server_busy","message":"busy"}}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL, "pat_x", &client.Options{MaxRetries: 2})
	_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": 1}})
	is.True(errors.Is(err, pd.ErrServerBusy)) // the last answer's error
	is.Equal(calls, 3)                        // one try and two retries
	calls = 0
	_, err = c.ListTables(ctx, "acme")
	is.True(errors.Is(err, pd.ErrServerBusy))
	is.Equal(calls, 3) // reads too
	calls = 0
	_, err = c.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT 1"})
	is.True(errors.Is(err, pd.ErrServerBusy))
	is.Equal(calls, 3) // a query is a read
	calls = 0
	_, err = c.CreateToken(ctx, "acme", pd.NewToken{})
	is.True(errors.Is(err, pd.ErrServerBusy))
	is.Equal(calls, 1) // token creation, which takes no key, is never sent again
}

// TestReadsAreRetried: a read answered 503 (a full queue, §10) or cut is
// sent again, and answered as the Store answers it.
func TestReadsAreRetried(t *testing.T) {
	for _, mode := range []string{"503", "cut"} {
		t.Run(mode, func(t *testing.T) {
			is := is.New(t)
			f := &flaky{mode: mode, reads: true, sent: map[string]int{}, seen: map[string]int{}}
			direct, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
			for _, a := range []API{direct, remote} {
				_, _, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
				is.NoErr(err)
				_, err = a.Insert(ctx, "acme", "t", []pd.Row{{"v": "a"}})
				is.NoErr(err)
			}
			for _, read := range []func(a API) (any, error){
				func(a API) (any, error) { return a.ListTables(ctx, "acme") },
				func(a API) (any, error) { return a.GetRecord(ctx, "acme", "t", 1) },
				func(a API) (any, error) { return a.ListRecords(ctx, "acme", "t", pd.ListOptions{}) },
				func(a API) (any, error) {
					r, err := a.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT v FROM t"})
					return r.Rows, err
				},
			} {
				want, err := read(direct)
				is.NoErr(err)
				got, err := read(remote)
				is.NoErr(err)
				is.Equal(got, want)
			}
		})
	}
}

func TestDownloadExportStreamsTheFile(t *testing.T) {
	is := is.New(t)
	s, admin := pdtest.NewProject(t, nil)
	srv := httptest.NewServer(httpapi.New(s, nil))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	_, err = c.Insert(ctx, "acme", "t", []pd.Row{{"v": "a,b"}, {"v": "c"}})
	is.NoErr(err)
	exp, err := c.CreateExport(ctx, "acme", "t", "csv")
	is.NoErr(err)
	var buf bytes.Buffer
	n, err := c.DownloadExport(ctx, "acme", exp.ID, &buf)
	is.NoErr(err)
	is.Equal(n, exp.SizeBytes)
	is.Equal(buf.String(), "id,v\n1,\"a,b\"\n2,c\n")
	_, err = c.DownloadExport(ctx, "acme", "exp_nope", &buf)
	is.True(errors.Is(err, pd.ErrExportNotFound))
	_, err = client.New(srv.URL, "pat_wrong", nil).ListTables(ctx, "acme")
	is.True(errors.Is(err, pd.ErrInvalidToken))
	is.True(strings.Contains(err.Error(), "token"))
}

func TestProjectExportThroughTheClient(t *testing.T) {
	is := is.New(t)
	s, admin := pdtest.NewProject(t, nil)
	srv := httptest.NewServer(httpapi.New(s, nil))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	exp, err := c.CreateProjectExport(ctx, "acme")
	is.NoErr(err)
	is.Equal(exp.Kind, pd.ExportKindProject)
	is.Equal(exp.ContentType, "application/vnd.sqlite3")
	var buf bytes.Buffer
	n, err := c.DownloadExport(ctx, "acme", exp.ID, &buf)
	is.NoErr(err)
	is.Equal(n, exp.SizeBytes)
	is.True(strings.HasPrefix(buf.String(), "SQLite format 3\x00"))
}

// TestExportQuotaThroughTheClient: the server's 507 export_quota_exceeded
// is ErrExportQuotaExceeded to the client's caller, message included.
func TestExportQuotaThroughTheClient(t *testing.T) {
	is := is.New(t)
	const csv = "id,v\n1,a\n" // the one export that fits
	s, admin := pdtest.NewProject(t, &pd.Options{MaxExportBytes: int64(len(csv))})
	srv := httptest.NewServer(httpapi.New(s, nil))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	_, err = c.Insert(ctx, "acme", "t", []pd.Row{{"v": "a"}})
	is.NoErr(err)
	exp, err := c.CreateExport(ctx, "acme", "t", "csv")
	is.NoErr(err)
	is.Equal(exp.SizeBytes, int64(len(csv)))
	_, err = c.CreateExport(ctx, "acme", "t", "csv")
	is.True(errors.Is(err, pd.ErrExportQuotaExceeded))
	is.True(strings.Contains(err.Error(), "of the 9 allowed"))
	_, err = c.CreateProjectExport(ctx, "acme")
	is.True(errors.Is(err, pd.ErrExportQuotaExceeded))
}
