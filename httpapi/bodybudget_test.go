package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestBodiesInFlightAreBounded: requests whose bodies are being read hold
// their Content-Length of Options.MaxBodyBytesInFlight until they are
// answered; one more body that does not fit waits, then gets 503
// server_busy with Retry-After, while requests without a body go on.
func TestBodiesInFlightAreBounded(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, &httpapi.Options{MaxBodyBytes: 1024, MaxBodyBytesInFlight: 2048, BodyWait: 100 * time.Millisecond,
		MaxBodyBytesPerToken: 2048, MaxBodyBytesPerProject: 2048}) // one token may hold all of it here
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n"}]}`), 201, "")

	first, second := holdBody(t, a, "acme", a.write), holdBody(t, a, "acme", a.write)

	res := a.do("POST", "/projects/acme/records/t", a.write, `{"n":"late"}`)
	a.must(res, 503, "server_busy")
	is.Equal(res.Header.Get("Retry-After"), "1")
	a.must(a.do("GET", "/projects/acme/records/t", a.read, ""), 200, "") // no body, no wait

	first.finish(t)
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"n":"now"}`), 201, "")
	second.finish(t)
	res = a.do("GET", "/projects/acme/records/t?count=exact", a.read, "")
	a.must(res, 200, "")
	is.Equal(res.data()["total"], json.Number("3"))
}

// heldBody is an insert of 1,024 bytes into table t whose body stops
// after its first bytes (see holdBody).
type heldBody struct {
	body *io.PipeWriter
	code <-chan int
}

// holdBody starts an insert of 1,024 bytes into table t of project with
// token, whose body stops after its first bytes: once the handler has read
// those, it holds its share of the body budget.
func holdBody(t *testing.T, a *api, project, token string) heldBody {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // a failed test does not hang
	req := httptest.NewRequest("POST", "/projects/"+project+"/records/t", pr)
	req.ContentLength = 1024
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	code := a.serveInBackground(req)
	if _, err := pw.Write([]byte(`{"n":"`)); err != nil { // returns once the handler reads it
		t.Fatal(err)
	}
	return heldBody{pw, code}
}

// finish sends the rest of the body and checks the insert's answer.
func (h heldBody) finish(t *testing.T) {
	t.Helper()
	if _, err := io.Copy(h.body, strings.NewReader(strings.Repeat("x", 1024-len(`{"n":""}`))+`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.body.Close(); err != nil {
		t.Fatal(err)
	}
	if code := <-h.code; code != 201 {
		t.Fatalf("insert: %d", code)
	}
}

// TestBodiesInFlightOfOneTokenAreBounded: a token sending bodies slowly
// holds at most its part of Options.MaxBodyBytesInFlight (a quarter by
// default), and a project a half: its next body waits for its own, then
// gets 503 server_busy, while another token of the project, and another
// project, still write.
func TestBodiesInFlightOfOneTokenAreBounded(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, &httpapi.Options{MaxBodyBytes: 1024, MaxBodyBytesInFlight: 8192, BodyWait: 100 * time.Millisecond})
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n"}]}`), 201, "")
	_, otherAdmin, err := a.store.CreateProject(ctx, "other", "")
	is.NoErr(err)
	a.must(a.do("POST", "/projects/other/table", otherAdmin.Token, `{"table_name":"t","columns":[{"column_name":"n"}]}`), 201, "")

	greedy := []heldBody{holdBody(t, a, "acme", a.write), holdBody(t, a, "acme", a.write)} // its part: 2,048 bytes
	res := a.do("POST", "/projects/acme/records/t", a.write, `{"n":"one more"}`)
	a.must(res, 503, "server_busy")
	is.Equal(res.Header.Get("Retry-After"), "1")

	a.must(a.do("POST", "/projects/acme/records/t", a.admin, `{"n":"another token"}`), 201, "")
	greedy = append(greedy, holdBody(t, a, "acme", a.admin), holdBody(t, a, "acme", a.admin)) // acme's part: 4,096 bytes
	a.must(a.do("POST", "/projects/other/records/t", otherAdmin.Token, `{"n":"another project"}`), 201, "")
	tok, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{})
	is.NoErr(err)
	a.must(a.do("POST", "/projects/acme/records/t", tok.Token, `{"n":"past acme's part"}`), 503, "server_busy")

	for _, h := range greedy {
		h.finish(t)
	}
	a.must(a.do("POST", "/projects/acme/records/t", tok.Token, `{"n":"now"}`), 201, "")
}

// TestAccessLogSaysWhyItWasBusy: the access log line of a 503 carries its
// message, which tells the bound or queue that refused it, and the lines
// of other answers carry none.
func TestAccessLogSaysWhyItWasBusy(t *testing.T) {
	is := is.New(t)
	var log pdtest.LockedBuffer
	a := newAPI(t, &httpapi.Options{MaxBodyBytes: 1024, MaxBodyBytesInFlight: 1024, BodyWait: 50 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n"}]}`), 201, "")
	held := holdBody(t, a, "acme", a.write)
	a.must(a.do("POST", "/projects/acme/records/t", a.admin, `{"n":"late"}`), 503, "server_busy")
	a.must(a.do("POST", "/projects/acme/records/t", a.read, `{"n":"refused"}`), 403, "permission_denied")
	held.finish(t)

	var busy []string
	for line := range strings.Lines(log.String()) {
		var m map[string]any
		is.NoErr(json.Unmarshal([]byte(line), &m))
		if why, ok := m["busy"].(string); ok && m["msg"] == "request" {
			is.Equal(m["status"], float64(503))
			busy = append(busy, why)
		}
	}
	is.Equal(len(busy), 1)
	is.True(strings.HasPrefix(busy[0], "the server is reading as many request bodies as it may at once")) // busy[0]
}
