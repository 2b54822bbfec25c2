package projectdata_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/projectdata/projectdata"
)

func ExampleStore_CreateToken() {
	s, done := exampleStore()
	defer done()
	ctx := context.Background()

	expires := time.Now().Add(24 * time.Hour)
	tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: "dashboard", Role: projectdata.RoleRead, ExpiresAt: &expires})
	if err != nil {
		log.Fatal(err)
	}
	// The secret is shown this once; the Store keeps only its hash.
	caller, err := s.Authenticate(ctx, "acme", tok.Token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.TokenName, caller.Role, caller.TokenID == tok.TokenID)

	if _, err := s.RevokeToken(ctx, "acme", tok.TokenID); err != nil {
		log.Fatal(err)
	}
	_, err = s.Authenticate(ctx, "acme", tok.Token)
	fmt.Println(projectdata.ErrorCode(err))
	// Output:
	// dashboard read true
	// invalid_token
}
