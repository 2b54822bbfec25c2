package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestClientAbortedBodyIsLoggedAtInfo(t *testing.T) {
	is := is.New(t)
	var logged pdtest.LockedBuffer
	a := newAPI(t, &httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	srv := httptest.NewServer(a.h)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	is.NoErr(err)
	fmt.Fprintf(conn, "POST /projects/acme/records/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[{\"name\":\"a\"},", a.admin)
	conn.(*net.TCPConn).CloseWrite() // the client gives up on its body
	bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	srv.Close() // waits for the handler

	is.True(strings.Contains(logged.String(), "level=INFO msg=client_aborted"))
	is.True(!strings.Contains(logged.String(), "level=ERROR"))
}

// TestClientGoneIsNotAnInternalError: a request whose client went away
// before the Store answered (its context cancelled) is logged at INFO as
// client_aborted and counted as the client's (400), not as a 500.
func TestClientGoneIsNotAnInternalError(t *testing.T) {
	is := is.New(t)
	var logged pdtest.LockedBuffer
	a := newAPI(t, &httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(gone, "POST", "/projects/acme/query", strings.NewReader(`{"sql":"SELECT 1"}`))
	req.Header.Set("Authorization", "Bearer "+a.admin)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	is.Equal(rec.Code, http.StatusBadRequest)
	is.True(strings.Contains(logged.String(), "level=INFO msg=client_aborted"))
	is.True(!strings.Contains(logged.String(), "level=ERROR"))
	is.True(!strings.Contains(logged.String(), "status=500"))
}

func TestBodiesAreRefusedWhileStreaming(t *testing.T) {
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"items","columns":[{"column_name":"name"}]}`), 201, "")
	t.Run("TooManyRows", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/records/items", a.write, "["+strings.Repeat(`{},`, 10000)+`{}]`), http.StatusRequestEntityTooLarge, "too_many_rows")
	})
	t.Run("TooManyParams", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT 1","params":[`+strings.Repeat(`1,`, 32766)+`1]}`), http.StatusBadRequest, "invalid_request")
	})
	t.Run("ObjectParams", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT 1","params":[{},{}]}`), http.StatusBadRequest, "invalid_request")
	})
	t.Run("BodyPastTheLimit", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `[{"name":"`+strings.Repeat("x", 9<<20)+`"}]`), http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("InfinityIsNotAnInternalError", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT 1e999 AS x"}`), 200, "")
	})
}
