package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestBatchDecodedOutsideTheWriter holds a batch insert while its body is
// still arriving: other writes to the project commit meanwhile, so the
// JSON decoding of one request overlaps the SQLite work of others. Were
// the body decoded holding the project's writer, the second insert would
// wait past the queue timeout and get 503.
func TestBatchDecodedOutsideTheWriter(t *testing.T) {
	is := is.New(t)
	s, admin := pdtest.NewProject(t, &projectdata.Options{QueueTimeout: 5 * time.Second})
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}}})
	is.NoErr(err)
	h := httpapi.New(s, nil)
	reading := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			r.Body = &signallingBody{ReadCloser: r.Body, reading: reading}
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	send := func(body io.Reader, slow bool) int {
		req, err := http.NewRequest("POST", srv.URL+"/projects/acme/records/items", body)
		is.NoErr(err)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		if slow {
			req.Header.Set("X-Slow", "1")
		}
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		defer res.Body.Close()
		io.Copy(io.Discard, res.Body)
		return res.StatusCode
	}

	pr, pw := io.Pipe()
	defer pw.Close() // a failed check still ends the slow request
	slow := make(chan int, 1)
	go func() { slow <- send(pr, true) }()
	_, err = pw.Write([]byte(`[{"name":"slow 1"},`))
	is.NoErr(err)
	<-reading // the batch's body is being decoded

	for i := range 3 {
		is.Equal(send(strings.NewReader(`{"name":"quick `+string(rune('a'+i))+`"}`), false), 201) // committed while the batch decodes
	}
	_, err = pw.Write([]byte(`{"name":"slow 2"}]`))
	is.NoErr(err)
	pw.Close()
	is.Equal(<-slow, 201)

	res, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{})
	is.NoErr(err)
	var names []string
	for _, r := range res.Rows {
		names = append(names, r["name"].(string))
	}
	is.Equal(names, []string{"quick a", "quick b", "quick c", "slow 1", "slow 2"}) // the batch landed after the others
}
