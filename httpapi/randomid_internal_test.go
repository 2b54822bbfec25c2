package httpapi

import (
	"regexp"
	"testing"

	"github.com/matryer/is"
)

func TestRandomIDsAreThePrefixAnd24HexDigitsAndDiffer(t *testing.T) {
	is := is.New(t)
	seen := map[string]bool{}
	for _, prefix := range []string{"req_", "oprun_"} {
		form := regexp.MustCompile(`^` + prefix + `[0-9a-f]{24}$`)
		for range 1000 {
			id := randomID(prefix)
			is.True(form.MatchString(id)) // id
			is.True(!seen[id])
			seen[id] = true
		}
	}
}
