package projectdatatest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/projectdatatest"
)

// A test of an application that uses the Store in process.
func ExampleNewProject() {
	testOrders := func(t *testing.T) {
		store := projectdatatest.NewStore(t)
		slug, _ := projectdatatest.NewProject(t, store)
		_, _, err := store.CreateTable(context.Background(), slug, projectdata.TableDef{
			Name:    "orders",
			Columns: []projectdata.ColumnDef{{Name: "item"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		// ... exercise the application against store ...
	}
	_ = testOrders // in a _test.go file: func TestOrders(t *testing.T) { ... }
}

// A test of a client of the HTTP API, against a real server.
func ExampleNewStore() {
	testClient := func(t *testing.T) {
		store := projectdatatest.NewStore(t)
		slug, admin := projectdatatest.NewProject(t, store)
		srv := httptest.NewServer(httpapi.New(store, nil))
		defer srv.Close()

		req, _ := http.NewRequest("GET", srv.URL+"/projects/"+slug, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(res.StatusCode) // 200
	}
	_ = testClient // in a _test.go file: func TestClient(t *testing.T) { ... }
}
