package client_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
