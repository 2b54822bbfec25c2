package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/httpapi"
)

// TestBodiesInFlightAreBounded: requests whose bodies are being read hold
// their Content-Length of Options.MaxBodyBytesInFlight until they are
// answered; one more body that does not fit waits, then gets 503
// server_busy with Retry-After, while requests without a body go on.
func TestBodiesInFlightAreBounded(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, &httpapi.Options{MaxBodyBytes: 1024, MaxBodyBytesInFlight: 2048, BodyWait: 100 * time.Millisecond})
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n"}]}`), 201, "")

	// hold starts an insert of 1,024 bytes whose body stops after its
	// first bytes: once the handler has read those, it holds its share.
	type held struct {
		body *io.PipeWriter
		code chan int
	}
	hold := func() held {
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // a failed test does not hang
		req := httptest.NewRequest("POST", "/projects/acme/records/t", pr)
		req.ContentLength = 1024
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+a.write)
		code := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			a.h.ServeHTTP(rec, req)
			code <- rec.Code
		}()
		_, err := pw.Write([]byte(`{"n":"`)) // returns once the handler reads it
		is.NoErr(err)
		return held{pw, code}
	}
	finish := func(h held) {
		_, err := io.Copy(h.body, strings.NewReader(strings.Repeat("x", 1024-len(`{"n":""}`))+`"}`))
		is.NoErr(err)
		is.NoErr(h.body.Close())
		is.Equal(<-h.code, 201)
	}
	first, second := hold(), hold()

	res := a.do("POST", "/projects/acme/records/t", a.write, `{"n":"late"}`)
	a.must(res, 503, "server_busy")
	is.Equal(res.Header.Get("Retry-After"), "1")
	a.must(a.do("GET", "/projects/acme/records/t", a.read, ""), 200, "") // no body, no wait

	finish(first)
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"n":"now"}`), 201, "")
	finish(second)
	res = a.do("GET", "/projects/acme/records/t?count=exact", a.read, "")
	a.must(res, 200, "")
	is.Equal(res.data()["total"], json.Number("3"))
}
