package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/httpapi"
)

// stalledWriter is a client that stops reading: its first write blocks
// until release is closed.
type stalledWriter struct {
	header   http.Header
	wrote    chan struct{} // closed at the first write
	release  chan struct{}
	once     sync.Once
	released sync.Once
}

func newStalledWriter() *stalledWriter {
	return &stalledWriter{header: http.Header{}, wrote: make(chan struct{}), release: make(chan struct{})}
}

// readOn lets the client read on.
func (s *stalledWriter) readOn() { s.released.Do(func() { close(s.release) }) }

func (s *stalledWriter) Header() http.Header { return s.header }
func (s *stalledWriter) WriteHeader(int)     {}
func (s *stalledWriter) Write(b []byte) (int, error) {
	s.once.Do(func() { close(s.wrote) })
	<-s.release
	return len(b), nil
}

// TestDownloadsOfOneTokenAreBounded: a token runs at most
// Options.MaxDownloadsPerToken export downloads at once, however slowly
// their clients read: one more answers 503 server_busy with Retry-After,
// while another token downloads, and once one of them ends the token
// downloads again.
func TestDownloadsOfOneTokenAreBounded(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, &httpapi.Options{MaxDownloadsPerToken: 3})
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"a"},{"name":"b"}]`), 201, "")
	url := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "").data()["export"].(map[string]any)["download_url"].(string)

	var stalled []*stalledWriter
	var done []chan struct{}
	defer func() { // after every client reads on
		for _, d := range done {
			<-d
		}
	}()
	for range 3 {
		w := newStalledWriter()
		defer w.readOn() // a failed test does not hang
		req := httptest.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+a.read)
		d := make(chan struct{})
		go func() { a.h.ServeHTTP(w, req); close(d) }()
		<-w.wrote // the download runs, its client reads nothing more
		stalled, done = append(stalled, w), append(done, d)
	}
	res := a.do("GET", url, a.read, "")
	a.must(res, 503, "server_busy")
	is.Equal(res.Header.Get("Retry-After"), "1")
	a.must(a.do("GET", url, a.write, ""), 200, "") // another token

	stalled[0].readOn() // its client reads on: the download ends
	<-done[0]
	a.must(a.do("GET", url, a.read, ""), 200, "")
}
