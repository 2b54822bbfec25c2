package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestCallerIdempotencyKey: a key on ctx (projectdata.WithIdempotency) is
// the write's Idempotency-Key on every attempt, so a caller's own retry is
// applied once and answered again, as the Store does.
func TestCallerIdempotencyKey(t *testing.T) {
	is := is.New(t)
	f := &flaky{mode: "503", sent: map[string]int{}, seen: map[string]int{}}
	direct, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
	for _, a := range []API{direct, remote} {
		_, _, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
		is.NoErr(err)
	}
	replays := 0
	kctx := pd.WithIdempotency(ctx, pd.Idempotency{Key: "order-42", OnReplay: func() { replays++ }})
	for _, a := range []API{direct, remote} {
		first, err := a.Insert(kctx, "acme", "t", []pd.Row{{"v": "once"}})
		is.NoErr(err)
		again, err := a.Insert(kctx, "acme", "t", []pd.Row{{"v": "once"}})
		is.NoErr(err)
		is.Equal(again, first) // the first answer again
		list, err := a.ListRecords(ctx, "acme", "t", pd.ListOptions{})
		is.NoErr(err)
		is.Equal(len(list.Rows), 1) // applied once
		_, err = a.Insert(kctx, "acme", "t", []pd.Row{{"v": "other"}})
		is.True(errors.Is(err, pd.ErrIdempotencyKeyReused)) // the key with another request
	}
	is.Equal(replays, 2) // the second call, through the Store and through the client
	f.mu.Lock()
	is.Equal(f.seen[`"order-42"`], 5) // each first sending and its retry, and the replayed call
	f.mu.Unlock()
}

// TestCallerIdempotencyKeyErrors: an invalid key, and a key on token
// creation, are refused as the Store refuses them; reads ignore a key.
func TestCallerIdempotencyKeyErrors(t *testing.T) {
	is := is.New(t)
	direct, remote, _ := pair(t, nil)
	store := direct.(storeAPI).Store
	for _, a := range []API{direct, remote} {
		_, _, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
		is.NoErr(err)
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "line\nbreak"} {
		_, want := store.Insert(pd.WithIdempotencyKey(ctx, key), "acme", "t", []pd.Row{{"v": 1}})
		_, got := remote.Insert(pd.WithIdempotencyKey(ctx, key), "acme", "t", []pd.Row{{"v": 1}})
		is.True(errors.Is(want, pd.ErrInvalidIdempotencyKey))
		is.True(errors.Is(got, pd.ErrInvalidIdempotencyKey))
		if !strings.Contains(key, "\n") { // the message names the byte at fault only in process
			is.Equal(got.Error(), want.Error())
		}
	}
	kctx := pd.WithIdempotencyKey(ctx, "token-1")
	_, want := store.CreateToken(kctx, "acme", pd.NewToken{})
	_, got := remote.(clientAPI).CreateToken(kctx, "acme", pd.NewToken{})
	is.True(errors.Is(got, pd.ErrInvalidRequest))
	is.Equal(got.Error(), want.Error())
	// Reads ignore a key, even an invalid one.
	_, err := remote.ListTables(pd.WithIdempotencyKey(ctx, ""), "acme")
	is.NoErr(err)
}

// inFlight answers the writes of h to one route: the first attempt is
// applied and its connection cut before the answer; the next answers 409
// idempotency_key_in_flight (the first attempt still runs, as far as the
// server knows) while busy is more than zero, counting down; the rest go to
// h. attempts counts them.
type inFlight struct {
	h        http.Handler
	busy     int
	attempts int
	mu       sync.Mutex
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/projects/acme/records/t" {
		f.h.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.attempts++
	first, busy := f.attempts == 1, f.busy > 0
	if !first && busy {
		f.busy--
	}
	f.mu.Unlock()
	switch {
	case first:
		f.h.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	case busy:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"ok":false,"data":null,"error":{"code":"idempotency_key_in_flight","message":"a request with this idempotency key is still running; retry once it has finished"},"request_id":"req_x","meta":{"generated_at":"2026-11-21T14:05:09.123Z"}}`)
	default:
		f.h.ServeHTTP(w, r)
	}
}

// TestRetryMeetsItsFirstAttemptInFlight: a retry that finds the write's
// first attempt still running (409 idempotency_key_in_flight) waits and
// retries, under the same key, and gets the first attempt's answer.
func TestRetryMeetsItsFirstAttemptInFlight(t *testing.T) {
	is := is.New(t)
	f := &inFlight{busy: 2}
	_, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
	_, _, err := remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	res, err := remote.Insert(ctx, "acme", "t", []pd.Row{{"v": "once"}})
	is.NoErr(err)
	is.Equal(res.InsertedIDs, []any{int64(1)}) // the first attempt's answer
	is.Equal(f.attempts, 4)                    // cut; in flight (the Transport's own retry on a new connection, then the client's); replayed
	list, err := remote.ListRecords(ctx, "acme", "t", pd.ListOptions{})
	is.NoErr(err)
	is.Equal(len(list.Rows), 1)

	// Within MaxRetries: the last answer is the error.
	f = &inFlight{busy: 100}
	_, remote, _ = pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
	_, _, err = remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	_, err = remote.Insert(ctx, "acme", "t", []pd.Row{{"v": "once"}})
	is.True(errors.Is(err, pd.ErrIdempotencyKeyInFlight))
	is.Equal(f.attempts, 5) // one try (cut, sent again by the Transport) and the default 3 retries
}

// TestCallerKeyInFlightIsNotRetried: a first attempt that finds its key in
// flight is another call's, as with the Store: the answer is the error.
func TestCallerKeyInFlightIsNotRetried(t *testing.T) {
	is := is.New(t)
	f := &inFlight{busy: 100, attempts: 1} // as if the first attempt was made
	_, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
	_, _, err := remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	_, err = remote.Insert(pd.WithIdempotencyKey(ctx, "k"), "acme", "t", []pd.Row{{"v": 1}})
	is.True(errors.Is(err, pd.ErrIdempotencyKeyInFlight))
	is.Equal(f.attempts, 2) // not retried
}

// TestOwnKeysGrowWithTime: the keys the client makes for writes (none on
// ctx) grow with time, so that the server stores each at the end of its
// key index rather than on a page of its own; and no two are the same.
func TestOwnKeysGrowWithTime(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var keys []string
	_, remote, _ := pair(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if k := r.Header.Get("Idempotency-Key"); k != "" {
				mu.Lock()
				keys = append(keys, k)
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	_, _, err := remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	for range 8 {
		time.Sleep(2 * time.Millisecond) // a new millisecond
		_, err := remote.Insert(ctx, "acme", "t", []pd.Row{{"v": "x"}})
		is.NoErr(err)
	}
	mu.Lock()
	defer mu.Unlock()
	is.Equal(len(keys), 9)
	for i := 1; i < len(keys); i++ {
		if keys[i] <= keys[i-1] {
			t.Fatalf("key %d %s does not sort after key %d %s", i, keys[i], i-1, keys[i-1])
		}
	}
}

// TestWriteRetriedAfterATimeoutAppliesOnce: a write whose first attempt the
// server applied but answered after the client's timeout (its
// http.Client.Timeout) is sent again under its key and answered with the
// first attempt's result, applied once.
func TestWriteRetriedAfterATimeoutAppliesOnce(t *testing.T) {
	is := is.New(t)
	s, admin := pdtest.NewProject(t, nil)
	h := httpapi.New(s, nil)
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/projects/acme/records/t" && attempts.Add(1) == 1 {
			h.ServeHTTP(httptest.NewRecorder(), r) // applied...
			<-r.Context().Done()                   // ...but answered too late: the client gave up
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := client.New(srv.URL, admin, &client.Options{HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	replays := 0
	kctx := pd.WithIdempotency(ctx, pd.Idempotency{Key: "timeout", OnReplay: func() { replays++ }})
	res, err := c.Insert(kctx, "acme", "t", []pd.Row{{"v": "once"}})
	is.NoErr(err)
	is.Equal(res.InsertedIDs, []any{int64(1)}) // the first attempt's row
	is.Equal(replays, 1)                       // the answer was the stored one
	is.True(attempts.Load() >= 2)
	list, err := c.ListRecords(ctx, "acme", "t", pd.ListOptions{})
	is.NoErr(err)
	is.Equal(len(list.Rows), 1) // applied once
}
