package projectdata_test

import (
	"context"
	"fmt"
	"log"

	"github.com/projectdata/projectdata"
)

// exampleRows is exampleOrders with n orders, qty 1 to n.
func exampleRows(n int) (*projectdata.Store, func()) {
	s, done := exampleOrders()
	rows := make([]projectdata.Row, n)
	for i := range rows {
		rows[i] = projectdata.Row{"item": fmt.Sprint("item ", i+1), "qty": i + 1}
	}
	if _, err := s.Insert(context.Background(), "acme", "orders", rows); err != nil {
		log.Fatal(err)
	}
	return s, done
}

func ExampleStore_ListRecords() {
	s, done := exampleRows(5)
	defer done()
	ctx := context.Background()

	// Pages of two, largest qty first, continued by cursor.
	opts := projectdata.ListOptions{Order: "-qty", Limit: 2, Columns: []string{"item"}}
	for {
		page, err := s.ListRecords(ctx, "acme", "orders", opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*page.Total, page.Rows)
		if page.NextCursor == "" {
			break
		}
		opts.After = page.NextCursor
	}
	// Output:
	// 5 [map[item:item 5] map[item:item 4]]
	// 5 [map[item:item 3] map[item:item 2]]
	// 5 [map[item:item 1]]
}

func ExampleStore_Rows() {
	s, done := exampleRows(1500)
	defer done()

	// Every row of the selection, page after page, whatever its size.
	n, sum := 0, int64(0)
	where := projectdata.Where{{Column: "qty", Op: ">", Value: 1000}}
	for row, err := range s.Rows(context.Background(), "acme", "orders", projectdata.ListOptions{Where: where}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
		sum += row["qty"].(int64)
	}
	fmt.Println(n, sum)
	// Output: 500 625250
}
