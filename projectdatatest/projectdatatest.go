// Package projectdatatest helps the tests of an application that embeds
// projectdata: a real Store in a temporary folder, and a project in it.
//
// Nothing is mocked: the Store is the real one, on real SQLite files that
// vanish with the test.
//
//	func TestOrders(t *testing.T) {
//		store := projectdatatest.NewStore(t)
//		slug, admin := projectdatatest.NewProject(t, store)
//		// use store directly, or serve httpapi.New(store, nil) with httptest
//		// and send admin as the bearer token
//	}
package projectdatatest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/projectdata/projectdata"
)

// NewStore opens a Store with the default options in a new folder of
// t.TempDir(), and closes it when the test and its subtests end. It fails
// the test if the Store cannot be opened.
func NewStore(t testing.TB) *projectdata.Store {
	t.Helper()
	s, err := projectdata.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatalf("projectdatatest: open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("projectdatatest: close store: %v", err)
		}
	})
	return s
}

// NewProject creates a project in s and returns its slug and its first
// admin token (pat_…). The slug is made from the test's name, so that
// failures name the test: TestOrders/Refund gets "testorders-refund", and
// a second project of the same test "testorders-refund-2". It fails the test
// if the project cannot be created.
func NewProject(t testing.TB, s *projectdata.Store) (slug, adminToken string) {
	t.Helper()
	base := slugOf(t.Name())
	for n := 1; ; n++ {
		slug = base
		if n > 1 {
			suffix := "-" + strconv.Itoa(n)
			slug = strings.TrimRight(base[:min(len(base), maxSlugLen-len(suffix))], "-") + suffix
		}
		_, tok, err := s.CreateProject(context.Background(), slug, t.Name())
		if errors.Is(err, projectdata.ErrProjectExists) {
			continue
		}
		if err != nil {
			t.Fatalf("projectdatatest: create project %q: %v", slug, err)
		}
		return slug, tok.Token
	}
}

// maxSlugLen is the longest slug the Store accepts.
const maxSlugLen = 63

// slugOf turns a test name into a valid project slug: lower-case letters
// and digits, every other run of characters a single "-".
func slugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= maxSlugLen {
			break
		}
	}
	s := strings.TrimRight(b.String()[:min(b.Len(), maxSlugLen)], "-")
	if s == "" {
		return "test"
	}
	return s
}
