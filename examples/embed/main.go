// Command embed shows projectdata used in process, without HTTP: it opens a
// Store, creates a project and a table, inserts rows, queries them and
// exports the table as CSV.
//
//	go run ./examples/embed            # in a temporary folder, removed after
//	go run ./examples/embed -data DIR  # in DIR, kept
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/projectdata/projectdata"
)

func main() {
	data := flag.String("data", "", "data folder (default: a temporary folder, removed after)")
	flag.Parse()
	if err := run(context.Background(), *data, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, data string, out io.Writer) error {
	if data == "" {
		tmp, err := os.MkdirTemp("", "projectdata-embed-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		data = tmp
	}
	store, err := projectdata.Open(data, nil)
	if err != nil {
		return err
	}
	defer store.Close()

	_, _, err = store.CreateProject(ctx, "shop", "Shop")
	if projectdata.ErrorCode(err) == projectdata.ErrProjectExists {
		err = nil // kept from an earlier run with -data
	}
	if err != nil {
		return err
	}
	_, _, err = store.CreateTable(ctx, "shop", projectdata.TableDef{
		Name: "orders",
		Columns: []projectdata.ColumnDef{
			{Name: "item", NotNull: true},
			{Name: "qty", Type: "INTEGER", Default: 1},
		},
	})
	if err != nil && !errors.Is(err, projectdata.ErrTableExists) {
		return err
	}
	ins, err := store.Insert(ctx, "shop", "orders", []projectdata.Row{
		{"item": "apple", "qty": 3},
		{"item": "pear"},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "inserted ids:", ins.InsertedIDs)

	// Values that do not fit are refused before anything is written.
	_, err = store.Insert(ctx, "shop", "orders", []projectdata.Row{{"item": "fig", "qty": "many"}})
	fmt.Fprintln(out, "refused:", projectdata.ErrorCode(err), "-", err)

	res, err := store.Query(ctx, "shop", projectdata.QueryRequest{
		SQL:  `SELECT item, qty FROM orders WHERE qty >= ? ORDER BY id`,
		Args: []any{1},
	})
	if err != nil {
		return err
	}
	for _, row := range res.Rows {
		fmt.Fprintln(out, "row:", row["item"], row["qty"])
	}

	exp, err := store.CreateExport(ctx, "shop", "orders", "csv")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "export:", exp.RowCount, "rows,", exp.SizeBytes, "bytes, sha256", exp.SHA256[:12]+"…")
	return nil
}
