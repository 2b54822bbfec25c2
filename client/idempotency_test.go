package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
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
