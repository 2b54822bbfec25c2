package projectdata_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/projectdata/projectdata"
)

func ExampleStore_FollowChanges() {
	s, done := exampleOrders()
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Follow from now: the changes after the newest one.
	after, err := s.LastChangeID(ctx, "acme")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		s.Insert(ctx, "acme", "orders", []projectdata.Row{{"item": "tea", "qty": 2}})
		s.DeleteRecord(ctx, "acme", "orders", 1)
	}()
	seen := 0
	for ch, err := range s.FollowChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Tables: []string{"orders"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ch.Op, ch.Key, ch.Row["item"])
		if seen++; seen == 2 {
			break // or cancel ctx; resume later after ch.ID
		}
	}
	// Output:
	// insert 1 tea
	// delete 1 <nil>
}
