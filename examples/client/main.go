// Command client calls a projectdata server with the Go client (package
// client): it creates table orders if it is missing, inserts rows, and
// runs the same query as the README's curl call.
//
//	go run ./examples/client -token pat_… [-url http://127.0.0.1:8080] [-project demo]
//
// The token can also come from $PROJECTDATA_TOKEN.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the server")
	token := flag.String("token", os.Getenv("PROJECTDATA_TOKEN"), "Project API Token (default $PROJECTDATA_TOKEN)")
	project := flag.String("project", "demo", "project slug")
	flag.Parse()
	if *token == "" {
		fmt.Fprintln(os.Stderr, "client: give a token with -token or $PROJECTDATA_TOKEN")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, client.New(*url, *token, nil), *project); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// run is the program against c, writing what it does to out.
func run(ctx context.Context, out io.Writer, c *client.Client, project string) error {
	_, _, err := c.CreateTable(ctx, project, projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{
		{Name: "item", NotNull: true},
		{Name: "qty", Type: projectdata.TypeInteger, Default: 1},
	}})
	switch {
	case errors.Is(err, projectdata.ErrTableExists):
		fmt.Fprintln(out, "table orders exists")
	case err != nil:
		return err
	default:
		fmt.Fprintln(out, "created table orders")
	}
	ins, err := c.Insert(ctx, project, "orders", []projectdata.Row{{"item": "plum", "qty": 5}, {"item": "kiwi"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "inserted %d rows: ids %v\n", ins.InsertedCount, ins.InsertedIDs)

	res, err := c.Query(ctx, project, projectdata.QueryRequest{
		SQL:  "SELECT item, qty FROM orders WHERE qty > ? ORDER BY qty DESC",
		Args: []any{1},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "query: %d rows\n", res.RowCount)
	for _, row := range res.Rows {
		fmt.Fprintf(out, "  %-12v %v\n", row["item"], row["qty"])
	}

	_, err = c.GetRecord(ctx, project, "orders", 999)
	fmt.Fprintf(out, "record 999: %v (errors.Is ErrRecordNotFound: %v)\n", err, errors.Is(err, projectdata.ErrRecordNotFound))
	return nil
}
