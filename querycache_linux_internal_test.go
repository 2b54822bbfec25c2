package projectdata

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestQueriesOutOfMemoryGiveTheirMemoryBack runs, on a reader that keeps a
// statement, query after query that runs SQLite out of its heap (the
// driver panics), and checks that the memory of each discarded reader went
// back to the system: a statement touched after such a panic, other than
// to finalize it, left its reader's memory (up to QueryMaxMemory, held
// outside Go's heap until the connection closes) taken for good; 30 of
// them took 0.9 GB.
func TestQueriesOutOfMemoryGiveTheirMemoryBack(t *testing.T) {
	is := is.New(t)
	s, _ := queryStore(t)
	ctx := context.Background()
	var aggs []string
	for i := range 20 {
		aggs = append(aggs, fmt.Sprintf("length(group_concat(v || '%d'))", i))
	}
	heavy := `SELECT ` + strings.Join(aggs, ", ") + ` FROM (SELECT printf('%.*c', 100000, 'x') AS v FROM generate_series(1, 35))`
	const small = "SELECT n FROM t WHERE n = ?"
	run := func() {
		for range 2 { // kept, then run from the cache
			_, err := s.Query(ctx, "acme", QueryRequest{SQL: small, Args: []any{1}})
			is.NoErr(err)
		}
		_, err := s.Query(ctx, "acme", QueryRequest{SQL: heavy})
		is.Equal(ErrorCode(err), ErrQueryBudgetExceeded)
	}
	run()
	before := residentKB(t)
	for range 10 {
		run()
	}
	grown := residentKB(t) - before
	t.Logf("resident memory grew by %d kB over 10 queries out of memory", grown)
	is.True(grown < 256<<10) // under 256 MB: the readers' memory went back
}

// residentKB is the process's resident memory in kB (VmRSS).
func residentKB(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
