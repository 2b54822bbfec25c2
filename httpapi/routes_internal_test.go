package httpapi

import (
	"net/url"
	"testing"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
)

// TestQueryPage checks the limit and offset query parameters: an empty one
// is absent (the Store's default), a limit below 1 is 1, a number too
// large for an int is the largest int (the Store clamps it), and anything
// else is invalid_request.
func TestQueryPage(t *testing.T) {
	for _, c := range []struct {
		query         string
		limit, offset int
		code          pd.Code
	}{
		{"", 0, 0, ""},
		{"limit=&offset=", 0, 0, ""},
		{"limit=7&offset=3", 7, 3, ""},
		{"limit=0", 1, 0, ""},
		{"limit=-5", 1, 0, ""},
		{"limit=99999999999999999999&offset=99999999999999999999", maxInt, maxInt, ""},
		{"limit=-99999999999999999999", 1, 0, ""},
		{"limit=x", 0, 0, pd.ErrInvalidRequest},
		{"offset=1.5", 0, 0, pd.ErrInvalidRequest},
	} {
		t.Run(c.query, func(t *testing.T) {
			is := is.New(t)
			q, err := url.ParseQuery(c.query)
			is.NoErr(err)
			var limit, offset int
			err = queryPage(q, &limit, &offset)
			is.Equal(pd.ErrorCode(err), map[bool]pd.Code{true: c.code, false: ""}[err != nil])
			if err == nil {
				is.Equal(limit, c.limit)
				is.Equal(offset, c.offset)
			}
		})
	}
}

const maxInt = int(^uint(0) >> 1)
