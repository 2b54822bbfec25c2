package projectdata_test

import (
	"context"
	"fmt"
	"log"

	"github.com/projectdata/projectdata"
)

func ExampleStore_CreateIndex() {
	s, done := exampleOrders()
	defer done()
	ctx := context.Background()

	idx, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item"}, Unique: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(idx.Name, idx.Columns, idx.Unique)

	_, err = s.Insert(ctx, "acme", "orders", []projectdata.Row{{"item": "tea"}, {"item": "tea"}})
	fmt.Println(projectdata.ErrorCode(err))
	// Output:
	// idx_orders_item [item] true
	// unique_violation
}
