package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// idemAPI is an api whose data folder is known, with table items (id,
// sku TEXT UNIQUE, qty INTEGER) holding rows 1 (sku a) and 2 (sku b), an
// index items_qty and a ready export; readID is the read token's id.
func idemAPI(t *testing.T) (a *api, dir string, readID int64) {
	t.Helper()
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC))
	s, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
	_, admin, err := s.CreateProject(ctx, "acme", "Acme")
	if err != nil {
		t.Fatal(err)
	}
	a = &api{t: t, store: s, admin: admin.Token, clock: clock}
	for _, r := range []struct {
		role projectdata.Role
		dst  *string
	}{{projectdata.RoleWrite, &a.write}, {projectdata.RoleRead, &a.read}} {
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: r.role, Name: string(r.role)})
		if err != nil {
			t.Fatal(err)
		}
		*r.dst, readID = tok.Token, tok.TokenID
	}
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "sku", Unique: true}, {Name: "qty", Type: "INTEGER"},
	}})
	if err == nil {
		_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}})
	}
	if err == nil {
		_, err = s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "items_qty"})
	}
	if err == nil {
		_, err = s.CreateExport(ctx, "acme", "items", "csv")
	}
	if err != nil {
		t.Fatal(err)
	}
	a.h = httpapi.New(s, &httpapi.Options{Now: clock.Now})
	return a, dir, readID
}

// comparable returns a response body with its request id and generation
// time blanked: what a replay must repeat byte for byte.
func comparable(r response) string {
	b := strings.Replace(string(r.Body), `"request_id":"`+r.Env.RequestID+`"`, `"request_id":"REQ"`, 1)
	return strings.Replace(b, `"generated_at":"`+r.Env.Meta.GeneratedAt+`"`, `"generated_at":"AT"`, 1)
}

// TestIdempotencyEveryWriteRoute sends every write route twice with one
// key: the second answer is the first again (status and body), marked
// Idempotent-Replayed, and it commits nothing.
func TestIdempotencyEveryWriteRoute(t *testing.T) {
	routes := []struct {
		method, path, body string
		admin              bool
		status             int
	}{
		{"PATCH", "/projects/acme", `{"project_name":"Acme 2"}`, true, 200},
		{"DELETE", "/projects/acme/auth/tokens/{read}", "", true, 200},
		{"POST", "/projects/acme/table", `{"table_name":"t2","columns":[{"column_name":"n","column_type":"INTEGER"}]}`, true, 201},
		{"PATCH", "/projects/acme/table/items", `{"display_name":"Items"}`, true, 200},
		{"DELETE", "/projects/acme/table/items", "", true, 200},
		{"POST", "/projects/acme/column/items", `{"column_name":"note"}`, true, 201},
		{"PATCH", "/projects/acme/column/items/qty", `{"default_value":5}`, true, 200},
		{"POST", "/projects/acme/records/items", `[{"sku":"z","qty":9007199254740993},{"sku":"y"}]`, false, 201},
		{"DELETE", "/projects/acme/records/items/1", "", false, 200},
		{"PATCH", "/projects/acme/records/items", `{"data":{"qty":9},"where":{"sku":"a"}}`, false, 200},
		{"PATCH", "/projects/acme/records/items/1", `{"qty":8}`, false, 200},
		{"DELETE", "/projects/acme/records/items", `{"where":[{"column":"qty","op":"<","value":5}]}`, false, 200},
		{"POST", "/projects/acme/indexes/items", `{"columns":["sku","qty"]}`, true, 201},
		{"DELETE", "/projects/acme/indexes/items/items_qty", "", true, 200},
		{"POST", "/projects/acme/exports", `{"table":"items","format":"csv"}`, false, 201},
		{"POST", "/projects/acme/exports", `{"kind":"project_export"}`, true, 201},
		{"DELETE", "/projects/acme/exports/not-found", "", true, 200},
		// An error is an answer too: a unique violation replays as itself.
		{"POST", "/projects/acme/records/items", `{"sku":"a"}`, false, 409},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path+" "+strconv.Itoa(rt.status), func(t *testing.T) {
			is := is.New(t)
			a, dir, readID := idemAPI(t)
			path := strings.Replace(rt.path, "{read}", strconv.FormatInt(readID, 10), 1)
			token := a.write
			if rt.admin {
				token = a.admin
			}
			code := ""
			if rt.status == 409 {
				code = "unique_violation"
			}
			first := a.must(a.do(rt.method, path, token, rt.body, "Idempotency-Key", "key-1"), rt.status, code)
			is.Equal(first.Header.Get("Idempotent-Replayed"), "")

			raw := pdtest.Raw(t, dir, "acme")
			version := func() int {
				st, _, err := raw.Prepare(`PRAGMA data_version`)
				is.NoErr(err)
				defer st.Close()
				st.Step()
				return st.ColumnInt(0)
			}
			before := version()
			a.clock.Advance(time.Second)                                                 // a second run would show a new updated_at
			again := a.do(rt.method, path, token, rt.body, "Idempotency-Key", `"key-1"`) // the same key, quoted
			is.Equal(again.Status, first.Status)
			is.Equal(again.Header.Get("Idempotent-Replayed"), "true")
			is.True(again.Env.RequestID != first.Env.RequestID)
			is.Equal(comparable(again), comparable(first)) // byte for byte but request_id and meta
			is.Equal(version(), before)                    // the replay committed nothing

			if rt.body != "" { // the same key with another body
				other := rt.body[:len(rt.body)-1] + " " + rt.body[len(rt.body)-1:]
				a.must(a.do(rt.method, path, token, other, "Idempotency-Key", "key-1"), 422, "idempotency_key_reused")
			}
		})
	}
}

func TestIdempotencyHeaderOnOtherRoutes(t *testing.T) {
	a, _, _ := idemAPI(t)
	t.Run("InvalidKeyIsRefusedEverywhere", func(t *testing.T) {
		for _, key := range []string{strings.Repeat("k", 256), `"open`, "caf\xc3\xa9"} {
			a.must(a.do("GET", "/projects/acme", a.read, "", "Idempotency-Key", key), 400, "invalid_idempotency_key")
			a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"sku":"k"}`, "Idempotency-Key", key), 400, "invalid_idempotency_key")
		}
	})
	t.Run("ReadsRunAfreshAndStoreNothing", func(t *testing.T) {
		is := is.New(t)
		for range 2 {
			res := a.must(a.do("GET", "/projects/acme/records/items/1", a.read, "", "Idempotency-Key", "read-key"), 200, "")
			is.Equal(res.Header.Get("Idempotent-Replayed"), "")
			res = a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT count(*) AS n FROM items"}`, "Idempotency-Key", "read-key"), 200, "")
			is.Equal(res.Header.Get("Idempotent-Replayed"), "")
		}
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"sku":"r"}`, "Idempotency-Key", "read-key"), 201, "")
		res := a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT count(*) AS n FROM items"}`, "Idempotency-Key", "read-key"), 200, "")
		is.Equal(string(res.data()["rows"].([]any)[0].(map[string]any)["n"].(json.Number)), "3") // the query saw the new row
	})
	t.Run("TokenCreationRefusesIt", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"token_name":"x"}`, "Idempotency-Key", "tok"), 400, "invalid_request")
	})
	t.Run("ScopedPerToken", func(t *testing.T) {
		is := is.New(t)
		first := a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"qty":7}`, "Idempotency-Key", "shared"), 201, "")
		other := a.must(a.do("POST", "/projects/acme/records/items", a.admin, `{"qty":7}`, "Idempotency-Key", "shared"), 201, "")
		is.Equal(other.Header.Get("Idempotent-Replayed"), "")
		is.True(string(other.Env.Data) != string(first.Env.Data)) // another row
	})
	t.Run("SamePathOtherMethodIsReuse", func(t *testing.T) {
		body := `{"where":{"sku":"b"}}` // no data: the Store refuses it, and stores that answer
		a.must(a.do("PATCH", "/projects/acme/records/items", a.write, body, "Idempotency-Key", "m"), 400, "invalid_request")
		a.must(a.do("DELETE", "/projects/acme/records/items", a.write, body, "Idempotency-Key", "m"), 422, "idempotency_key_reused")
	})
}

// TestIdempotencyStoresRefusals: a keyed write refused before its
// operation ran (a malformed body, too many rows, another media type, a
// field the route does not take) is answered under its key as any other
// error (CONTRACT §13): the same request replays it, another body with
// the key is idempotency_key_reused, and nothing is written. A read's
// refusal, and a refusal of the caller (a role), store nothing.
func TestIdempotencyStoresRefusals(t *testing.T) {
	a, _, _ := idemAPI(t)
	cases := []struct {
		name, method, path, body, code string
		status                         int
		headers                        []string
	}{
		{"MalformedInsert", "POST", "/projects/acme/records/items", `{"sku":`, "invalid_json", 400, nil},
		{"TooManyRows", "POST", "/projects/acme/records/items", "[" + strings.Repeat(`{"qty":1},`, 10000) + `{"qty":1}]`, "too_many_rows", 413, nil},
		{"MalformedPatch", "PATCH", "/projects/acme/records/items/1", `{"qty":`, "invalid_json", 400, nil},
		{"UnknownField", "PATCH", "/projects/acme", `{"project_name":"X","extra":1}`, "invalid_request", 400, nil},
		{"OtherMediaType", "PATCH", "/projects/acme/records/items/1", `qty=3`, "unsupported_media_type", 415, []string{"Content-Type", "text/plain"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			key := "refused-" + strconv.Itoa(i)
			headers := append([]string{"Idempotency-Key", key}, c.headers...)
			first := a.must(a.do(c.method, c.path, a.admin, c.body, headers...), c.status, c.code)
			is.Equal(first.Header.Get("Idempotent-Replayed"), "")
			again := a.must(a.do(c.method, c.path, a.admin, c.body, headers...), c.status, c.code)
			is.Equal(again.Header.Get("Idempotent-Replayed"), "true")
			is.Equal(comparable(again), comparable(first))
			a.must(a.do(c.method, c.path, a.admin, `{"qty":5}`, "Idempotency-Key", key), 422, "idempotency_key_reused")
		})
	}
	t.Run("NothingWritten", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/records/items", a.read, ""), 200, "")
		is.Equal(res.data()["total"], json.Number("2"))
		res = a.must(a.do("GET", "/projects/acme/records/items/1", a.read, ""), 200, "")
		is.Equal(res.data()["row"].(map[string]any)["qty"], json.Number("1"))
	})
	t.Run("ReadsAndCallersAreNotStored", func(t *testing.T) {
		is := is.New(t)
		for range 2 {
			res := a.must(a.do("GET", "/projects/acme/records/nope", a.read, "", "Idempotency-Key", "read-refused"), 404, "table_not_found")
			is.Equal(res.Header.Get("Idempotent-Replayed"), "")
			res = a.must(a.do("POST", "/projects/acme/records/items", a.read, `{"qty":1}`, "Idempotency-Key", "role-refused"), 403, "permission_denied")
			is.Equal(res.Header.Get("Idempotent-Replayed"), "")
		}
	})
}

// TestIdempotencyInFlightOverHTTP holds a keyed DELETE open while its body
// is still arriving (the fingerprint reads the whole body): a duplicate
// meanwhile is 409, and once the first finishes the duplicate replays it.
func TestIdempotencyInFlightOverHTTP(t *testing.T) {
	is := is.New(t)
	a, dir, _ := idemAPI(t)
	// reading tells when the first request's body is first read: by then
	// its key is in flight (only the fingerprint reads a DELETE's body).
	reading := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			r.Body = &signallingBody{ReadCloser: r.Body, reading: reading}
		}
		a.h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	send := func(body io.Reader) (*http.Response, []byte) {
		req, err := http.NewRequest("DELETE", srv.URL+"/projects/acme/records/items/1", body)
		is.NoErr(err)
		req.Header.Set("Authorization", "Bearer "+a.write)
		req.Header.Set("Idempotency-Key", "slow")
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		is.NoErr(err)
		return res, b
	}
	pr, pw := io.Pipe()
	defer pw.Close() // a failed check still ends the first request
	type answer struct {
		res  *http.Response
		body []byte
	}
	done := make(chan answer, 1)
	go func() {
		res, body := send(pr)
		done <- answer{res, body}
	}()
	_, err := pw.Write([]byte(" "))
	is.NoErr(err)
	<-reading
	res, body := send(nil)
	is.Equal(res.StatusCode, 409)
	is.True(strings.Contains(string(body), `"idempotency_key_in_flight"`))
	pw.Close()
	first := <-done
	is.Equal(first.res.StatusCode, 200)
	res, body = send(nil)
	is.Equal(res.StatusCode, 422) // the first request had a body (" "), this one none
	_ = body
	is.Equal(countItems(t, dir), 1)
}

func countItems(t *testing.T, dir string) int {
	raw := pdtest.Raw(t, dir, "acme")
	st, _, err := raw.Prepare(`SELECT count(*) FROM items`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Step()
	return st.ColumnInt(0)
}

// signallingBody is a request body that signals its first read.
type signallingBody struct {
	io.ReadCloser
	reading chan<- struct{}
	once    sync.Once
}

func (b *signallingBody) Read(p []byte) (int, error) {
	b.once.Do(func() { b.reading <- struct{}{} })
	return b.ReadCloser.Read(p)
}

// TestIdempotencyConcurrentRetriesOnTwoStores: the same keyed request sent
// at once, eight times, to two servers whose Stores share the data folder
// runs once: every answer but "in flight" is the same status and body, and
// an insert adds its row once.
func TestIdempotencyConcurrentRetriesOnTwoStores(t *testing.T) {
	a, dir, _ := idemAPI(t)
	other, err := projectdata.Open(dir, &projectdata.Options{Now: a.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	b := *a
	b.store, b.h = other, httpapi.New(other, &httpapi.Options{Now: a.clock.Now})
	for i, r := range []struct{ method, path, body string }{
		{"POST", "/projects/acme/records/items", `[{"sku":"n","qty":5}]`},
		{"POST", "/projects/acme/records/items", `[{"sku":"a","qty":5}]`}, // 409 unique_violation
		{"PATCH", "/projects/acme/records/items/1", `{"qty":77}`},
		{"DELETE", "/projects/acme/records/items/2", ""},
		{"POST", "/projects/acme/table", `{"table_name":"t2","columns":[{"column_name":"n","column_type":"INTEGER"}]}`},
		{"POST", "/projects/acme/column/items", `{"column_name":"note"}`},
	} {
		var mu sync.Mutex
		answers := map[string]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := a
				if g%2 == 1 {
					h = &b
				}
				res := h.do(r.method, r.path, a.admin, r.body, "Idempotency-Key", "k"+strconv.Itoa(i))
				if res.code() == "idempotency_key_in_flight" {
					return
				}
				mu.Lock()
				answers[strconv.Itoa(res.Status)+" "+comparable(res)]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(answers) != 1 {
			t.Errorf("%s %s: %d different answers: %v", r.method, r.path, len(answers), answers)
		}
	}
	if n := countItems(t, dir); n != 2 { // a and b, less 2, plus n
		t.Errorf("%d items, want 2", n)
	}
}

// idemServer serves a over a real loopback server; a request with the
// header X-Test-Byte-Reads has its body read one byte at a time, as a
// body arrives from a slow network.
func idemServer(t *testing.T, a *api) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Byte-Reads") != "" {
			r.Body = io.NopCloser(iotest.OneByteReader(r.Body))
		}
		a.h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// send sends one request to srv and returns its status, its
// Idempotent-Replayed header and its body.
func send(t *testing.T, srv *httptest.Server, method, path, token, body string, headers ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Idempotent-Replayed"), string(b)
}

// TestIdempotencyRefusedRetryOfASuccess: a request with the method, path,
// body and key of one that succeeded, refused before its operation runs
// for what the fingerprint leaves out (its Content-Type), is answered with
// its refusal (it was a 500: the Store had no results to replay the
// success into), stores nothing, and the first answer still replays.
func TestIdempotencyRefusedRetryOfASuccess(t *testing.T) {
	a, dir, _ := idemAPI(t)
	srv := idemServer(t, a)
	for _, rt := range []struct{ method, path, token, body string }{
		{"POST", "/projects/acme/records/items", a.write, `{"sku":"x"}`}, // stored with its effect
		{"PATCH", "/projects/acme", a.admin, `{"project_name":"X"}`},     // looked up first
		{"PATCH", "/projects/acme/records/items", a.write, `{"data":{"qty":7},"where":{"sku":"a"}}`},
	} {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			is := is.New(t)
			key := "ok-then-refused " + rt.method + " " + rt.path
			status, _, first := send(t, srv, rt.method, rt.path, rt.token, rt.body, "Idempotency-Key", key)
			is.True(status < 300)
			status, replayed, body := send(t, srv, rt.method, rt.path, rt.token, rt.body, "Idempotency-Key", key, "Content-Type", "text/plain")
			is.Equal(status, 415) // not 500
			is.True(strings.Contains(body, `"unsupported_media_type"`))
			is.Equal(replayed, "")
			status, replayed, again := send(t, srv, rt.method, rt.path, rt.token, rt.body, "Idempotency-Key", key)
			is.True(status < 300)
			is.Equal(replayed, "true")
			is.Equal(again[:strings.Index(again, `"request_id"`)], first[:strings.Index(first, `"request_id"`)])
		})
	}
	is.New(t).Equal(countItems(t, dir), 3) // one row inserted, once
}

// TestIdempotencyFingerprintOfABodyPastTheLimit: a body past the limit,
// refused as soon as its decoder meets an error, has one fingerprint
// however its bytes arrive (it hashed what the handler happened to read
// and the limit's worth more, so a retry of the same request read in
// other pieces was idempotency_key_reused).
func TestIdempotencyFingerprintOfABodyPastTheLimit(t *testing.T) {
	a, _, _ := idemAPI(t)
	a.h = httpapi.New(a.store, &httpapi.Options{MaxBodyBytes: 1024})
	srv := idemServer(t, a)
	for _, rt := range []struct{ method, path, body, code string }{
		{"PATCH", "/projects/acme/records/items/1", `{"qty":x` + strings.Repeat(" ", 5000) + "}", "invalid_json"},
		{"POST", "/projects/acme/records/items", `{"qty":x` + strings.Repeat(" ", 5000) + "}", "invalid_json"},
		{"POST", "/projects/acme/records/items", `{"sku":"` + strings.Repeat("s", 5000) + `"}`, "payload_too_large"},
	} {
		t.Run(rt.method+" "+rt.code, func(t *testing.T) {
			is := is.New(t)
			key := "past-limit-" + rt.method + rt.code
			status, _, first := send(t, srv, rt.method, rt.path, a.write, rt.body, "Idempotency-Key", key, "X-Test-Byte-Reads", "1")
			is.True(strings.Contains(first, `"`+rt.code+`"`))
			for _, headers := range [][]string{{"Idempotency-Key", key}, {"Idempotency-Key", key, "X-Test-Byte-Reads", "1"}} {
				again, replayed, body := send(t, srv, rt.method, rt.path, a.write, rt.body, headers...)
				is.Equal(again, status)
				is.Equal(replayed, "true")
				is.True(strings.Contains(body, `"`+rt.code+`"`))
			}
		})
	}
}

// effects counts what a write leaves in the data folder of idemAPI: change
// log entries, stored answers, manifests and export files, managed indexes,
// revoked tokens and tables.
func effects(t *testing.T, dir string) string {
	raw := pdtest.Raw(t, dir, "acme")
	st, _, err := raw.Prepare(`SELECT (SELECT count(*) FROM _pd_changes), (SELECT count(*) FROM _pd_idempotency),
		(SELECT count(*) FROM _pd_exports), (SELECT count(*) FROM _pd_indexes),
		(SELECT count(*) FROM _pd_tokens WHERE revoked_at IS NOT NULL), (SELECT count(*) FROM _pd_tables)`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Step() {
		t.Fatal(st.Err())
	}
	files, err := os.ReadDir(filepath.Join(dir, "acme", "exports"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("changes %d answers %d exports %d files %d indexes %d revoked %d tables %d",
		st.ColumnInt(0), st.ColumnInt(1), st.ColumnInt(2), len(files), st.ColumnInt(3), st.ColumnInt(4), st.ColumnInt(5))
}

// TestIdempotencyConcurrentDuplicates sends one keyed write several times
// at once over real connections: one runs, each other is 409
// idempotency_key_in_flight or the replay of its answer (never a 500), and
// what is left is what one request leaves.
func TestIdempotencyConcurrentDuplicates(t *testing.T) {
	const n = 6
	routes := []struct {
		method, path, body string
		admin              bool
	}{
		{"PATCH", "/projects/acme", `{"project_name":"Acme 2"}`, true},
		{"DELETE", "/projects/acme/auth/tokens/{read}", "", true},
		{"POST", "/projects/acme/table", `{"table_name":"t2","columns":[{"column_name":"n","column_type":"INTEGER"}]}`, true},
		{"DELETE", "/projects/acme/table/items", "", true},
		{"POST", "/projects/acme/column/items", `{"column_name":"note"}`, true},
		{"POST", "/projects/acme/records/items", `[{"sku":"z"},{"qty":5}]`, false},
		{"POST", "/projects/acme/records/items", `{"sku":"a"}`, false}, // unique_violation
		{"DELETE", "/projects/acme/records/items/1", "", false},
		{"PATCH", "/projects/acme/records/items", `{"data":{"qty":9},"where":{"sku":"a"}}`, false},
		{"PATCH", "/projects/acme/records/items/1", `{"qty":8}`, false},
		{"DELETE", "/projects/acme/records/items", `{"where":[{"column":"qty","op":"<","value":5}]}`, false},
		{"POST", "/projects/acme/indexes/items", `{"columns":["sku","qty"]}`, true},
		{"POST", "/projects/acme/exports", `{"table":"items","format":"csv"}`, false},
		{"POST", "/projects/acme/exports", `{"kind":"project_export"}`, true},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path+" "+rt.body, func(t *testing.T) {
			is := is.New(t)
			once, onceDir, readID := idemAPI(t) // the reference: the request sent once
			path := strings.Replace(rt.path, "{read}", strconv.FormatInt(readID, 10), 1)
			token := func(a *api) string {
				if rt.admin {
					return a.admin
				}
				return a.write
			}
			wantStatus, _, wantBody := send(t, idemServer(t, once), rt.method, path, token(once), rt.body, "Idempotency-Key", "dup")
			want := effects(t, onceDir)

			a, dir, _ := idemAPI(t)
			srv := idemServer(t, a)
			type answer struct {
				status   int
				replayed string
				body     string
			}
			answers := make(chan answer, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					status, replayed, body := send(t, srv, rt.method, path, token(a), rt.body, "Idempotency-Key", "dup")
					answers <- answer{status, replayed, body}
				})
			}
			wg.Wait()
			close(answers)
			ran := 0
			for ans := range answers {
				if ans.status == 409 && strings.Contains(ans.body, `"idempotency_key_in_flight"`) {
					continue
				}
				is.Equal(ans.status, wantStatus) // the answer, first or replayed
				if ans.replayed == "" {
					ran++
				}
				if wantStatus >= 300 {
					is.Equal(ans.body[:strings.Index(ans.body, `"request_id"`)], wantBody[:strings.Index(wantBody, `"request_id"`)])
				}
			}
			is.Equal(ran, 1)
			is.Equal(effects(t, dir), want) // applied once
		})
	}
}

// TestIdempotencyCutBodyStoresNothing: a keyed write whose client goes
// away in the middle of its body leaves no answer under the key, so its
// retry with the whole body runs (rather than idempotency_key_reused, the
// fingerprint of a partial body).
func TestIdempotencyCutBodyStoresNothing(t *testing.T) {
	is := is.New(t)
	a, dir, _ := idemAPI(t)
	srv := idemServer(t, a)
	for _, rt := range []struct{ method, path, token, body string }{
		{"POST", "/projects/acme/records/items", a.write, `[{"sku":"cut"},{"qty":5}]`},
		{"PATCH", "/projects/acme/records/items/1", a.write, `{"qty":77}`},
		{"PATCH", "/projects/acme", a.admin, `{"project_name":"Cut"}`},
	} {
		key := "cut " + rt.path
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		is.NoErr(err)
		_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n%s",
			rt.method, rt.path, rt.token, key, len(rt.body), rt.body[:len(rt.body)-3])
		is.NoErr(err)
		conn.Close()
		deadline := time.Now().Add(time.Minute)
		for {
			status, replayed, _ := send(t, srv, rt.method, rt.path, rt.token, rt.body, "Idempotency-Key", key)
			if status == 409 && time.Now().Before(deadline) { // the cut request is still being answered
				time.Sleep(10 * time.Millisecond)
				continue
			}
			is.True(status == 200 || status == 201) // it ran
			is.Equal(replayed, "")
			break
		}
	}
	is.Equal(countItems(t, dir), 4)
}

// TestIdempotencyOfAnInsertWithoutRows: an insert with an empty body, sent
// with a length of zero or chunked, is invalid_request, and so is its
// replay.
func TestIdempotencyOfAnInsertWithoutRows(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(map[bool]string{false: "Length", true: "Chunked"}[chunked], func(t *testing.T) {
			is := is.New(t)
			a, _, _ := idemAPI(t)
			send := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest("POST", "/projects/acme/records/items", nil)
				if chunked {
					req.Body, req.ContentLength = io.NopCloser(strings.NewReader("")), -1
				}
				req.Header.Set("Authorization", "Bearer "+a.write)
				req.Header.Set("Idempotency-Key", "empty-1")
				rec := httptest.NewRecorder()
				a.h.ServeHTTP(rec, req)
				return rec
			}
			for _, replayed := range []string{"", "true"} {
				rec := send()
				is.Equal(rec.Code, 400)
				is.True(strings.Contains(rec.Body.String(), `"code":"invalid_request"`)) // the first answer and its replay
				is.Equal(rec.Header().Get("Idempotent-Replayed"), replayed)
			}
		})
	}
}
