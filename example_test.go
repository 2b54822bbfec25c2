package projectdata_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/projectdata/projectdata"
)

// exampleStore opens a Store in a temporary folder with project "acme".
func exampleStore() (*projectdata.Store, func()) {
	dir, err := os.MkdirTemp("", "projectdata-example-")
	if err != nil {
		log.Fatal(err)
	}
	store, err := projectdata.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := store.CreateProject(context.Background(), "acme", "Acme"); err != nil {
		log.Fatal(err)
	}
	return store, func() { store.Close(); os.RemoveAll(dir) }
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "projectdata-example-")
	defer os.RemoveAll(dir)

	store, err := projectdata.Open(dir, nil) // nil: default options
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	proj, admin, err := store.CreateProject(context.Background(), "acme", "Acme Inc")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(proj.Slug, proj.Name, admin.Role, admin.Token[:4])
	// Output: acme Acme Inc admin pat_
}

func ExampleStore_CreateTable() {
	store, done := exampleStore()
	defer done()

	table, cols, err := store.CreateTable(context.Background(), "acme", projectdata.TableDef{
		Name: "orders",
		Columns: []projectdata.ColumnDef{
			{Name: "item", NotNull: true},
			{Name: "qty", Type: "INTEGER", Default: 1},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(table.Name)
	for _, c := range cols {
		fmt.Println(c.Name, c.Type, c.IsPrimary)
	}
	// Output:
	// orders
	// id INTEGER true
	// item TEXT false
	// qty INTEGER false
}

func ExampleStore_Query() {
	store, done := exampleStore()
	defer done()
	ctx := context.Background()

	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.Query(ctx, "acme", projectdata.QueryRequest{
		SQL:   `SELECT count(*) AS n, :label AS label FROM orders`,
		Named: map[string]any{"label": "all orders"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Columns, res.Rows[0]["n"], res.Rows[0]["label"])

	_, err = store.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT * FROM _pd_tokens`})
	fmt.Println(projectdata.ErrorCode(err))
	// Output:
	// [n label] 0 all orders
	// query_table_denied
}

func ExampleWithCaller() {
	store, done := exampleStore()
	defer done()
	ctx := context.Background()

	reader, err := store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead})
	if err != nil {
		log.Fatal(err)
	}
	caller, err := store.Authenticate(ctx, "acme", reader.Token)
	if err != nil {
		log.Fatal(err)
	}
	_, err = store.RenameProject(projectdata.WithCaller(ctx, caller), "acme", "New name")
	fmt.Println(projectdata.ErrorCode(err))
	// Output: permission_denied
}

func ExampleStore_CreateExport() {
	store, done := exampleOrders()
	defer done()
	ctx := context.Background()

	_, err := store.Insert(ctx, "acme", "orders", []projectdata.Row{
		{"item": "apple", "qty": 3},
		{"item": "fig, dried", "qty": 12},
	})
	if err != nil {
		log.Fatal(err)
	}
	exp, err := store.CreateExport(ctx, "acme", "orders", "csv")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exp.Status, exp.RowCount, exp.DownloadURL == "/projects/acme/export/download/"+exp.ID)

	_, f, err := store.OpenExport(ctx, "acme", exp.ID)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	io.Copy(os.Stdout, f)
	// Output:
	// ready 2 true
	// id,item,qty
	// 1,apple,3
	// 2,"fig, dried",12
}
