package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// manyTokens gives acme n more tokens, named with characters that JSON
// escapes.
func manyTokens(t *testing.T, a *api, n int) {
	t.Helper()
	for i := range n {
		if _, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{Name: fmt.Sprintf("session <%d> & é", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListTokensStreamsTheEnvelope: the token list, written as the Store
// reads it, is byte for byte the envelope encoding/json makes of every
// token at once, over several pages of the Store and chunks of the answer
// (TestHeadIsGetWithoutBody checks its HEAD).
func TestListTokensStreamsTheEnvelope(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	manyTokens(t, a, 600) // 603 tokens: 3 pages, about 100 KB
	res := a.must(a.do("GET", "/projects/acme/auth/tokens", a.admin, "", "X-Operation-Key", "k", "X-Operation-Run-Id", "oprun_t"), 200, "")
	toks, err := a.store.ListTokens(ctx, "acme") // after the request: its token's last use recorded
	is.NoErr(err)
	is.Equal(len(toks), 603)
	data, err := json.Marshal(map[string]any{"tokens": toks})
	is.NoErr(err)
	want := fmt.Sprintf(`{"ok":true,"data":%s,"error":null,"request_id":%q,"operation_key":"k","operation_run_id":"oprun_t","operation_grouping_status":"accepted_provided_run","meta":{"generated_at":"2026-11-21T14:05:09.123Z"}}`+"\n",
		data, res.Header.Get("X-Request-Id"))
	is.True(len(res.Body) > 3*32<<10)
	is.Equal(string(res.Body), want)
	is.Equal(res.Header.Get("Content-Type"), "application/json; charset=utf-8")
}

// failTokensFrom makes every read of the tokens from id on fail inside
// SQLite, behind the Store's back: the table, renamed _pd_tokens_kept, is
// read through a view that parses the token names, which are not JSON,
// from id on.
func failTokensFrom(t *testing.T, raw *sqlite3.Conn, id int) {
	t.Helper()
	pdtest.Exec(t, raw, `DROP VIEW IF EXISTS _pd_tokens`)
	pdtest.Exec(t, raw, fmt.Sprintf(`CREATE VIEW _pd_tokens AS SELECT id, CASE WHEN id < %d THEN name ELSE json(name) END AS name,
		role, secret_sha256, expires_at, revoked_at, last_used_at, created_at FROM _pd_tokens_kept`, id))
}

// TestListTokensFailingAfterTheAnswerStarted: a read of the tokens that
// fails once the answer has started (its second page) aborts the
// response: the client gets a broken body, never a short list that reads
// as whole, and the failure is logged. One that fails before anything was
// written (the first page) answers with the error envelope.
func TestListTokensFailingAfterTheAnswerStarted(t *testing.T) {
	is := is.New(t)
	var logged pdtest.LockedBuffer
	a := newAPI(t, &httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	manyTokens(t, a, 600)
	a.must(a.do("GET", "/projects/acme", a.admin, ""), 200, "") // the token's use recorded: no write to the view later
	srv := httptest.NewServer(a.h)
	defer srv.Close()

	raw := pdtest.Raw(t, a.dir, "acme")
	pdtest.Exec(t, raw, `ALTER TABLE _pd_tokens RENAME TO _pd_tokens_kept`)
	failTokensFrom(t, raw, 300) // the second page of 256
	req, err := http.NewRequest("GET", srv.URL+"/projects/acme/auth/tokens", nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+a.admin)
	res, err := srv.Client().Do(req)
	is.NoErr(err)
	is.Equal(res.StatusCode, 200) // the answer had started
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	is.True(err != nil) // io.ErrUnexpectedEOF: the body never ended
	is.True(len(body) >= 32<<10)
	is.True(!json.Valid(body))
	is.True(strings.Contains(logged.String(), "answer aborted after it started"))
	is.True(strings.Contains(logged.String(), "malformed JSON"))
	is.True(strings.Contains(logged.String(), "code=internal_error")) // the access log's line

	failTokensFrom(t, raw, 2) // the first page
	failed := a.must(a.do("GET", "/projects/acme/auth/tokens", a.admin, ""), 500, "internal_error")
	is.True(!strings.Contains(string(failed.Body), "session"))
}

// TestListTokensOutlastsServerWriteTimeout: a list of tokens that takes
// longer than the server's WriteTimeout to write, to a client that takes
// every part in time, arrives whole, as an export's download does: the
// timeout bounds each write of the answer, not the whole answer.
func TestListTokensOutlastsServerWriteTimeout(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	pdtest.Exec(t, pdtest.Raw(t, a.dir, "acme"), `INSERT INTO _pd_tokens (name, role, secret_sha256, created_at)
		SELECT printf('%.*c', 1000, 'n'), 'read', randomblob(32), (SELECT created_at FROM _pd_tokens WHERE id = 1)
		FROM generate_series(1, 24000)`) // about 25 MB of answer

	status, body := slowRead(t, a, "/projects/acme/auth/tokens", a.admin)
	is.Equal(status, 200)
	var env struct {
		Data struct {
			Tokens []projectdata.Token `json:"tokens"`
		} `json:"data"`
	}
	is.NoErr(json.Unmarshal(body, &env))
	is.Equal(len(env.Data.Tokens), 24000+3)
}
