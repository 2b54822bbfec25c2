package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestConnectionsAreReused: answers larger than a read are read to their
// end, so their connection serves the next request.
func TestConnectionsAreReused(t *testing.T) {
	is := is.New(t)
	s, admin := pdtest.NewProject(t, nil)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(httpapi.New(s, nil))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	rows := make([]pd.Row, 1000)
	for i := range rows {
		rows[i] = pd.Row{"v": strings.Repeat("x", 200)}
	}
	_, err = c.Insert(ctx, "acme", "t", rows)
	is.NoErr(err)
	before := conns.Load()
	for range 20 {
		list, err := c.ListRecords(ctx, "acme", "t", pd.ListOptions{Limit: 1000})
		is.NoErr(err)
		is.Equal(len(list.Rows), 1000)
		res, err := c.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT * FROM t", Limit: 1000})
		is.NoErr(err)
		is.Equal(len(res.Rows), 1000)
	}
	is.Equal(conns.Load(), before) // no new connection

	// A download its writer stops: the rest of the file is read, too.
	exp, err := c.CreateExport(ctx, "acme", "t", "csv")
	is.NoErr(err)
	is.True(exp.SizeBytes > 100<<10)
	before = conns.Load()
	_, err = c.DownloadExport(ctx, "acme", exp.ID, failingWriter{})
	is.True(errors.Is(err, errWriterFull))
	_, err = c.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(conns.Load(), before)
}

var errWriterFull = errors.New("full")

// failingWriter refuses every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWriterFull }

// cutBody answers the first POST to a route after applying it, with its
// headers and half its body, then cuts the connection.
type cutBody struct {
	h        http.Handler
	attempts atomic.Int32
}

func (f *cutBody) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/projects/acme/records/t" || f.attempts.Add(1) > 1 {
		f.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	b := rec.Body.Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(rec.Code)
	w.Write(b[:len(b)/2])
	http.NewResponseController(w).Flush()
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// TestCutAnswerIsRetried: a write whose answer is cut mid-body is sent
// again under its key, as after a network error, and answered once.
func TestCutAnswerIsRetried(t *testing.T) {
	is := is.New(t)
	f := &cutBody{}
	_, remote, _ := pair(t, func(h http.Handler) http.Handler { f.h = h; return f })
	_, _, err := remote.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	res, err := remote.Insert(ctx, "acme", "t", []pd.Row{{"v": "once"}})
	is.NoErr(err)
	is.Equal(res.InsertedIDs, []any{int64(1)})
	is.Equal(f.attempts.Load(), int32(2))
	list, err := remote.ListRecords(ctx, "acme", "t", pd.ListOptions{})
	is.NoErr(err)
	is.Equal(len(list.Rows), 1)
}

// TestDeadlineWhileReadingTheAnswer: the error of a body read that ctx's
// deadline ends is that deadline, not an answer without an envelope.
func TestDeadlineWhileReadingTheAnswer(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"data":`)
		http.NewResponseController(w).Flush()
		select { // the rest never comes in time
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond) // ends while the body is read
	defer cancel()
	_, err := client.New(srv.URL, "pat_x", nil).ListTables(dctx, "acme")
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(strings.Contains(err.Error(), "read the answer"))
}

// TestAnswerSizeIsBounded: an answer longer than MaxResponseBytes (64 MiB
// by default) is ErrResponseTooLarge, and is not read further.
func TestAnswerSizeIsBounded(t *testing.T) {
	var mib atomic.Int32 // the padding of the answer
	var written atomic.Int64
	done := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"data":{"tables":[],"padding":"`)
		chunk := strings.Repeat("a", 1<<20)
		for range mib.Load() {
			n, err := io.WriteString(w, chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		io.WriteString(w, `"}}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		mib  int32
		opts *client.Options
		err  error
	}{
		{"UnderTheDefault", 63, nil, nil},
		{"OverTheDefault", 65, nil, client.ErrResponseTooLarge},
		{"FarOverTheOption", 64, &client.Options{MaxResponseBytes: 1 << 20}, client.ErrResponseTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			mib.Store(tc.mib)
			written.Store(0)
			_, err := client.New(srv.URL, "pat_x", tc.opts).ListTables(ctx, "acme")
			is.Equal(errors.Is(err, client.ErrResponseTooLarge), tc.err != nil)
			if err != nil {
				is.True(strings.Contains(err.Error(), "MaxResponseBytes"))
			}
			<-done
			if tc.opts != nil {
				is.True(written.Load() < 32<<20) // the client stopped reading near its limit
			}
		})
	}
}

// TestAnswersWithoutEnvelope: an answer without an envelope (a proxy's
// page, an empty body) is the error of its status, and a status other than
// 2xx is never a success.
func TestAnswersWithoutEnvelope(t *testing.T) {
	var answer atomic.Value // the answer's status, Content-Type and body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load().([3]string)
		if a[1] != "" {
			w.Header().Set("Content-Type", a[1])
		}
		status, _ := strconv.Atoi(a[0])
		w.WriteHeader(status)
		io.WriteString(w, a[2])
	}))
	defer srv.Close()
	c := client.New(srv.URL, "pat_x", &client.Options{MaxRetries: -1})
	listTables := func() error { _, err := c.ListTables(ctx, "acme"); return err }
	listColumns := func() error { _, _, err := c.ListColumns(ctx, "acme", "t"); return err }
	getRecord := func() error { _, err := c.GetRecord(ctx, "acme", "t", 1); return err }
	createExport := func() error { _, err := c.CreateExport(ctx, "acme", "t", "csv"); return err }
	for _, tc := range []struct {
		name   string
		answer [3]string
		call   func() error
		want   pd.Code
	}{
		{"UnauthorizedText", [3]string{"401", "text/plain", "unauthorized"}, listColumns, pd.ErrInvalidToken},
		{"ForbiddenEmpty", [3]string{"403", "", ""}, listColumns, pd.ErrPermissionDenied},
		{"NotFoundEmpty", [3]string{"404", "", ""}, listColumns, pd.ErrRouteNotFound},
		{"NotFoundEmptyRecord", [3]string{"404", "", ""}, getRecord, pd.ErrRecordNotFound},
		{"NotFoundEmptyTables", [3]string{"404", "", ""}, listTables, pd.ErrInvalidToken}, // as the specification says
		{"TooLargeHTML", [3]string{"413", "text/html", "<html>too large</html>"}, listColumns, pd.ErrPayloadTooLarge},
		{"UnavailableHTML", [3]string{"503", "text/html", "<html>maintenance</html>"}, listColumns, pd.ErrServerBusy},
		{"InsufficientStorageEmpty", [3]string{"507", "", ""}, createExport, pd.ErrExportQuotaExceeded},
		{"BadGatewayHTML", [3]string{"502", "text/html", "<html>bad gateway</html>"}, listColumns, pd.ErrInternal},
		{"ServerErrorSaysOK", [3]string{"500", "application/json", `{"ok":true,"data":{"table":"t","columns":[]}}`}, listColumns, pd.ErrInternal},
		{"NotFoundSaysOK", [3]string{"404", "application/json", `{"ok":true,"data":{"table":"t","columns":[]}}`}, listColumns, pd.ErrRouteNotFound},
		{"OKWithoutError", [3]string{"200", "application/json", `{"ok":false}`}, listColumns, pd.ErrInternal},
		{"OKNotJSON", [3]string{"200", "text/html", "<html>login</html>"}, listColumns, pd.ErrInternal},
		{"EnvelopeCode", [3]string{"429", "application/json", `{"ok":false,"data":null,"error":{"code":"rate_limited","message":"slow down"}}`}, listColumns, "rate_limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			answer.Store(tc.answer)
			err := tc.call()
			is.True(err != nil)
			is.Equal(pd.ErrorCode(err), tc.want)
		})
	}
}

// TestRedirectsAreNotFollowed: a write that meets a redirect is an error,
// not a GET of the place it points to taken for the write's success.
func TestRedirectsAreNotFollowed(t *testing.T) {
	s, admin := pdtest.NewProject(t, nil)
	target := httptest.NewServer(httpapi.New(s, nil))
	defer target.Close()
	direct := client.New(target.URL, admin, nil)
	_, _, err := direct.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = direct.Insert(ctx, "acme", "t", []pd.Row{{"v": "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			is := is.New(t)
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+r.URL.RequestURI(), status)
			}))
			defer redirector.Close()
			hc := &http.Client{}
			c := client.New(redirector.URL, admin, &client.Options{HTTPClient: hc})
			_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": "x"}})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), target.URL)) // names where it points
			_, err = c.DeleteRecord(ctx, "acme", "t", 1)
			is.True(err != nil)
			list, err := direct.ListRecords(ctx, "acme", "t", pd.ListOptions{})
			is.NoErr(err)
			is.Equal(list.Rows, []pd.Row{{"id": int64(1), "v": "kept"}}) // nothing written
			is.True(hc.CheckRedirect == nil)                             // the caller's client is not changed
		})
	}
}
