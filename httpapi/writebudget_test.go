package httpapi_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestBulkChangesOverWriteBudget: a bulk update or delete whose where
// would hold the project's writer for minutes (a like over a big value)
// answers 422 query_budget_exceeded after Options.WriteTimeout; another
// client's insert sent while it runs waits for it at most that long, and
// commits. Without the budget the insert would wait past QueueTimeout
// and get 503.
func TestBulkChangesOverWriteBudget(t *testing.T) {
	store, admin := pdtest.NewProject(t, &projectdata.Options{WriteTimeout: 100 * time.Millisecond, QueueTimeout: time.Second})
	a := &api{t: t, store: store, admin: admin, h: httpapi.New(store, nil)}
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "big", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("a", 3000000)}}); err != nil {
		t.Fatal(err)
	}
	// One call of like that fails at its end, over 3 MB: minutes.
	slow := `[{"column":"v","op":"like","value":"%` + strings.Repeat("a", projectdata.MaxLikePattern-2) + `b"}]`
	for _, change := range []struct{ method, body string }{
		{"PATCH", `{"data":{"v":"x"},"where":` + slow + `}`},
		{"DELETE", `{"where":` + slow + `}`},
	} {
		t.Run(change.method, func(t *testing.T) {
			is := is.New(t)
			a.t = t
			// The change, and an insert sent while it runs.
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second) // ends the change should the budget not
			defer cancel()
			reading := make(chan struct{}, 1)
			body := &signallingBody{ReadCloser: io.NopCloser(strings.NewReader(change.body)), reading: reading}
			req := httptest.NewRequestWithContext(rctx, change.method, "/projects/acme/records/big", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+admin)
			bulk := a.serveInBackground(req)
			<-reading
			time.Sleep(20 * time.Millisecond) // the change is on the writer (its small body read at once)
			a.must(a.do("POST", "/projects/acme/records/big", admin, `{"v":"inserted"}`), 201, "")
			is.Equal(<-bulk, 422)
			n, err := store.ListRecords(ctx, "acme", "big", projectdata.ListOptions{})
			is.NoErr(err)
			is.Equal(len(n.Rows), 2) // the big row, unchanged, and the insert
			is.Equal(len(n.Rows[0]["v"].(string)), 3000000)
			_, err = store.DeleteRecord(ctx, "acme", "big", n.Rows[1]["id"])
			is.NoErr(err)

			// The answer, as the document describes it.
			res := a.must(a.do(change.method, "/projects/acme/records/big", admin, change.body), 422, "query_budget_exceeded")
			is.True(strings.Contains(res.Env.Error.Message, "write budget of 100ms"))
		})
	}
}
