//go:build changes

package main

import (
	"context"

	"github.com/projectdata/projectdata"
)

// changes reads the whole change log.
func changes(ctx context.Context, s *projectdata.Store, p string) any {
	all := []projectdata.Change{}
	for after := int64(0); ; {
		page := must1(s.ListChanges(ctx, p, projectdata.ChangeQuery{After: after, Limit: 1000}))
		all = append(all, page.Changes...)
		if len(page.Changes) == 0 {
			return all
		}
		after = page.NextAfter
	}
}
