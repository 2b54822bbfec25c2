package projectdata_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/projectdata/projectdata"
)

// exampleOrders is exampleStore with table orders (id, item, qty).
func exampleOrders() (*projectdata.Store, func()) {
	s, done := exampleStore()
	_, _, err := s.CreateTable(context.Background(), "acme", projectdata.TableDef{
		Name:    "orders",
		Columns: []projectdata.ColumnDef{{Name: "item"}, {Name: "qty", Type: "INTEGER"}},
	})
	if err != nil {
		panic(err)
	}
	return s, done
}

func ExampleStore_Insert() {
	s, done := exampleOrders()
	defer done()
	ctx := context.Background()

	// An insert body: one object, or an array of objects. DecodeRows keeps
	// numbers exact.
	rows, err := projectdata.DecodeRows(strings.NewReader(`[{"item": "tea", "qty": 2}, {"item": "cake", "qty": "3"}]`), 0)
	if err != nil {
		panic(err)
	}
	res, err := s.Insert(ctx, "acme", "orders", rows)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.InsertedCount, res.InsertedIDs)

	row, err := s.GetRecord(ctx, "acme", "orders", "2")
	if err != nil {
		panic(err)
	}
	fmt.Println(row["item"], row["qty"])

	_, err = s.Insert(ctx, "acme", "orders", []projectdata.Row{{"item": "jam"}, {"qty": "many"}})
	fmt.Println(projectdata.ErrorCode(err), err)
	// Output:
	// 2 [1 2]
	// cake 3
	// invalid_column_value row 1: column "qty": "many" does not fit column type INTEGER
}

func ExampleStore_UpdateRecords() {
	s, done := exampleOrders()
	defer done()
	ctx := context.Background()
	rows, _ := projectdata.DecodeRows(strings.NewReader(`[{"item": "tea", "qty": 2}, {"item": "cake", "qty": 5}, {"item": "jam"}]`), 0)
	if _, err := s.Insert(ctx, "acme", "orders", rows); err != nil {
		panic(err)
	}

	// The body of PATCH /projects/acme/records/orders.
	var upd projectdata.BulkUpdate
	body := `{"data": {"qty": 0}, "where": [{"column": "qty", "op": ">", "value": 1}]}`
	if err := json.Unmarshal([]byte(body), &upd); err != nil {
		panic(err)
	}
	res, err := s.UpdateRecords(ctx, "acme", "orders", upd)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.AffectedRows)

	// Without a where clause, only an administrator's allow_all will do.
	_, err = s.DeleteRecords(ctx, "acme", "orders", projectdata.BulkDelete{})
	fmt.Println(projectdata.ErrorCode(err))

	del, err := s.DeleteRecords(ctx, "acme", "orders", projectdata.BulkDelete{Where: projectdata.Where{{Column: "qty", Op: "is_null"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(del.AffectedRows)
	// Output:
	// 2
	// where_required
	// 1
}
