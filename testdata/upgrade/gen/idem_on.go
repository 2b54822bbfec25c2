//go:build idem

package main

import (
	"context"

	"github.com/projectdata/projectdata"
)

// answers stores idempotent answers: of the application's own calls and
// of a token, a result, an error, and one large enough to be compressed.
func answers(ctx context.Context, s *projectdata.Store, p string, writer int64) []ExpectedAnswer {
	bulk := make([]projectdata.Row, 300)
	for i := range bulk {
		bulk[i] = projectdata.Row{"v": i * 1000003}
	}
	calls := []ExpectedAnswer{
		{Key: "k-insert", Body: "body one", Table: "people", Rows: []projectdata.Row{{"slug": "idem-1", "name": "Idem Ⅰ"}}},
		{TokenID: writer, Key: "k-insert", Body: "body two", Table: "people", Rows: []projectdata.Row{{"slug": "idem-2", "name": "Idem Ⅱ"}}},
		{Key: "k-dup", Body: "body dup", Table: "people", Rows: []projectdata.Row{{"slug": "ann", "name": "Ann again"}}},
		{TokenID: writer, Key: `k "quoted" \ key`, Body: "bulk", Table: "bulk", Rows: bulk},
	}
	for i, a := range calls {
		kctx := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: a.Key, Fingerprint: func() []byte { return []byte(a.Body) }})
		if a.TokenID != 0 {
			kctx = projectdata.WithCaller(kctx, projectdata.Caller{Project: p, TokenID: a.TokenID, Role: projectdata.RoleWrite})
		}
		res, err := s.Insert(kctx, p, a.Table, a.Rows.([]projectdata.Row))
		if err != nil {
			calls[i].Code, calls[i].Message = string(projectdata.ErrorCode(err)), err.Error()
			if calls[i].Code != "unique_violation" {
				must(err)
			}
			continue
		}
		calls[i].Result = res
	}
	return calls
}
