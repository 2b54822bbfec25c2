package projectdata_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// Environment of an idempotency crash child: its data folder and its
// first batch number.
const (
	idemCrashChildEnv = "PROJECTDATA_IDEM_CRASH_CHILD"
	idemCrashStartEnv = "PROJECTDATA_IDEM_CRASH_START"
)

// idemBatch is the rows of batch n: crashBatch rows with automatic keys.
func idemBatch(n int) []projectdata.Row {
	rows := make([]projectdata.Row, crashBatch)
	for j := range rows {
		rows[j] = projectdata.Row{"batch": n, "seq": j}
	}
	return rows
}

func idemBatchKey(n int) string { return "batch-" + strconv.Itoa(n) }

// idemCrashChild inserts batches start, start+1, … each under its own
// idempotency key, one at a time, until it is killed. It says "S n" before
// it starts batch n and acknowledges it ("I n id,id,…") after Insert
// returned.
func idemCrashChild(dir string) {
	start, _ := strconv.Atoi(os.Getenv(idemCrashStartEnv))
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		fmt.Println("F", err)
		return
	}
	out := bufio.NewWriter(os.Stdout)
	for n := start; ; n++ {
		fmt.Fprintf(out, "S %d\n", n) // started: from here the batch may be stored
		out.Flush()
		res, err := s.Insert(projectdata.WithIdempotencyKey(ctx, idemBatchKey(n)), "acme", "events", idemBatch(n))
		if err != nil {
			fmt.Fprintln(out, "F", err)
			out.Flush()
			return
		}
		fmt.Fprintf(out, "I %d %s\n", n, joinIDs(res.InsertedIDs))
		out.Flush()
	}
}

func joinIDs(ids []any) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}

// TestIdempotencyCrash kills a child inserting keyed batches at random
// points; after each kill the parent retries the batch the child had not
// acknowledged, with the same key, until it is acknowledged. In the end
// every batch is in the table exactly once, and every key replays the
// inserted_ids of the rows really stored.
func TestIdempotencyCrash(t *testing.T) {
	killPoints := crashKillPoints(20, 4, 60)
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "events", Columns: []projectdata.ColumnDef{
		{Name: "batch", Type: "INTEGER", NotNull: true}, {Name: "seq", Type: "INTEGER", NotNull: true},
	}})
	is.NoErr(err)

	answered := map[int]string{} // batch → inserted_ids as first acknowledged
	retried, storedByChild := 0, 0
	next, started := 0, -1 // next batch for a child; highest batch a child started
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range killPoints {
		cmd, lines := startChild(t, idemCrashChildEnv+"="+dir, idemCrashStartEnv+"="+strconv.Itoa(next))
		want := rng.IntN(21)
		timeout := time.After(30 * time.Second)
	read:
		for got := 0; got < want; got++ {
			select {
			case line, ok := <-lines:
				if !ok {
					break read
				}
				kind, rest, _ := strings.Cut(line, " ")
				nStr, ids, _ := strings.Cut(rest, " ")
				n, _ := strconv.Atoi(nStr)
				switch kind {
				case "S":
					got-- // not an acknowledgement
					started = max(started, n)
				case "I":
					answered[n] = ids
					next = n + 1
				default:
					t.Fatalf("kill point %d: child failed: %s", k, rest)
				}
			case <-timeout:
				t.Fatalf("kill point %d: child stalled", k)
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
		for line := range lines { // acknowledgements after the kill are lost; starts count
			if nStr, ok := strings.CutPrefix(line, "S "); ok {
				n, _ := strconv.Atoi(nStr)
				started = max(started, n)
			}
		}
		cmd.Wait()

		// Every batch started and not acknowledged (the child may have
		// stored it or not): retry it with its key until it is
		// acknowledged.
		for ; next <= started; next++ {
			if retryBatch(t, s, k, next, answered) {
				storedByChild++
			}
			retried++
		}
	}

	raw := pdtest.Raw(t, dir, "acme")
	st, _, err := raw.Prepare(`SELECT batch, group_concat(id, ',' ORDER BY seq), count(*) FROM events GROUP BY batch`)
	is.NoErr(err)
	stored := map[int]string{}
	for st.Step() {
		if st.ColumnInt(2) != crashBatch {
			t.Fatalf("batch %d has %d rows, want exactly %d", st.ColumnInt(0), st.ColumnInt(2), crashBatch)
		}
		stored[st.ColumnInt(0)] = st.ColumnText(1)
	}
	is.NoErr(st.Close())
	is.Equal(len(stored), len(answered)) // no batch missing, none extra
	for n, ids := range answered {
		is.Equal(stored[n], ids) // the answer named the rows really stored
		replayed := false
		res, err := s.Insert(projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: idemBatchKey(n), OnReplay: func() { replayed = true }}), "acme", "events", idemBatch(n))
		is.NoErr(err)
		is.True(replayed)
		is.Equal(joinIDs(res.InsertedIDs), stored[n]) // and every replay names them too
	}
	t.Logf("%d kill points, %d batches, %d retried after a kill, of which %d the child had stored (replayed)", killPoints, len(answered), retried, storedByChild)
}

// retryBatch inserts batch n under its key until the Store answers.
// It reports whether the answer was a replay: the dead child had stored it.
func retryBatch(t *testing.T, s *projectdata.Store, k, n int, answered map[int]string) (replayed bool) {
	t.Helper()
	idem := projectdata.Idempotency{Key: idemBatchKey(n), OnReplay: func() { replayed = true }}
	for range 10 {
		res, err := s.Insert(projectdata.WithIdempotency(ctx, idem), "acme", "events", idemBatch(n))
		if err == nil {
			answered[n] = joinIDs(res.InsertedIDs)
			return replayed
		}
		t.Logf("kill point %d: retry of batch %d: %v", k, n, err)
	}
	t.Fatalf("kill point %d: batch %d never acknowledged", k, n)
	return false
}
