package projectdata_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// crashChildEnv names the data folder a crash child works in.
const crashChildEnv = "PROJECTDATA_CRASH_CHILD"

// crashBatch is the rows of one insert in the crash test.
const crashBatch = 50

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(idemCrashChildEnv); dir != "" {
		idemCrashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(ddlCrashChildEnv); dir != "" {
		ddlCrashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(snapCrashChildEnv); dir != "" {
		snapCrashChild(dir)
		os.Exit(0)
	}
	code := m.Run()
	closeListFixture()
	os.Exit(code)
}

// crashChild writes until it is killed: batch inserts, schema changes and
// exports, acknowledging each on stdout only after it returned.
// Acknowledgements: I batch, C column, R rebuild, E export, F failure;
// X batch announces the bulk delete of a batch.
func crashChild(dir string) {
	ctx := context.Background()
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		fmt.Println("F", err)
		return
	}
	out := bufio.NewWriter(os.Stdout)
	ack := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	start := int(time.Now().UnixNano() % 1e9) // batches of different runs do not collide
	for i := start; ; i++ {
		rows := make([]projectdata.Row, crashBatch)
		for j := range rows {
			rows[j] = projectdata.Row{"batch": i, "seq": j, "payload": strings.Repeat("x", 20)}
		}
		if _, err := s.Insert(ctx, "acme", "events", rows); err != nil {
			ack("F insert %v", err)
			return
		}
		ack("I %d", i)
		switch i % 9 {
		case 3: // a column SQLite adds in place
			name := "c" + strconv.Itoa(i)
			if _, err := s.AddColumn(ctx, "acme", "events", projectdata.ColumnDef{Name: name}); err != nil {
				ack("F column %v", err)
				return
			}
			ack("C %s", name)
		case 5: // a change that rebuilds the table
			def := projectdata.SetTo[any]("d" + strconv.Itoa(i))
			if _, err := s.UpdateColumn(ctx, "acme", "events", "payload", projectdata.ColumnUpdate{Default: def}); err != nil {
				ack("F rebuild %v", err)
				return
			}
			ack("R %d", i)
		case 7: // a bulk delete of the batch before; announced first, as it may commit unacknowledged
			ack("X %d", i-1)
			del := projectdata.BulkDelete{Where: projectdata.Where{{Column: "batch", Op: "=", Value: i - 1}}}
			if _, err := s.DeleteRecords(ctx, "acme", "events", del); err != nil {
				ack("F delete %v", err)
				return
			}
		case 6:
			exp, err := s.CreateExport(ctx, "acme", "events", "csv")
			if err != nil {
				ack("F export %v", err)
				return
			}
			ack("E %s", exp.ID)
		}
	}
}

// crashKillPoints is how many times a crash test kills its child: quick
// in CI (-short), fewer under the race detector (SQLite runs about 15
// times slower there), long otherwise.
func crashKillPoints(quick, race, long int) int {
	switch {
	case raceEnabled:
		return race
	case testing.Short():
		return quick
	}
	return long
}

// killChild hands ack the lines of the child (started by startChild) up
// to want of them, or until it ends, kills it with SIGKILL pause later, and
// hands ack the lines it wrote before it died; k is the kill point, for
// the test's messages.
func killChild(t *testing.T, k int, cmd *exec.Cmd, lines <-chan string, want int, pause time.Duration, ack func(line string)) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for got := 0; got < want; got++ {
		select {
		case line, ok := <-lines:
			if !ok {
				got = want
				continue
			}
			ack(line)
		case <-timeout:
			t.Fatalf("kill point %d: child stalled", k)
		}
	}
	time.Sleep(pause)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		ack(line)
	}
	cmd.Wait()
}

// startChild runs the test binary again as a crash test's child, with the
// environment variables env (NAME=value) set, and returns it with the
// lines it writes to its standard output, closed when it has ended.
func startChild(t *testing.T, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

// TestCrashSafety kills a writing child process with SIGKILL at many
// points and checks, each time, that the database is intact, every
// acknowledged write is there, no batch is half-applied and no export
// manifest points at a partial file.
func TestCrashSafety(t *testing.T) {
	killPoints := crashKillPoints(20, 4, 60)
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "events", Columns: []projectdata.ColumnDef{
		{Name: "batch", Type: "INTEGER", NotNull: true}, {Name: "seq", Type: "INTEGER", NotNull: true}, {Name: "payload"},
	}})
	is.NoErr(err)
	is.NoErr(s.Close())

	acked := map[int]bool{}
	columns := map[string]bool{}
	exports := map[string]bool{}
	verified := map[string]bool{} // export files already checked against their manifests
	var feed crashFeed            // the change log, read on from kill point to kill point
	rebuilds, deletes := 0, 0
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range killPoints {
		cmd, lines := startChild(t, crashChildEnv+"="+dir)
		// Kill after a random number of acknowledgements (0 to 40), so the
		// kill lands anywhere in inserts, schema changes and exports.
		want := rng.IntN(41)
		got := 0
		timeout := time.After(30 * time.Second)
	read:
		for got < want {
			select {
			case line, ok := <-lines:
				if !ok {
					break read
				}
				got++
				kind, arg, _ := strings.Cut(line, " ")
				switch kind {
				case "I":
					n, _ := strconv.Atoi(arg)
					acked[n] = true
				case "C":
					columns[arg] = true
				case "X":
					n, _ := strconv.Atoi(arg)
					delete(acked, n)
					deletes++
				case "R":
					rebuilds++
				case "E":
					exports[arg] = true
				case "F":
					t.Fatalf("kill point %d: child failed: %s", k, arg)
				}
			case <-timeout:
				t.Fatalf("kill point %d: child stalled", k)
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
		for line := range lines { // drain; lines after the kill acknowledge nothing, but announce deletes
			if kind, arg, _ := strings.Cut(line, " "); kind == "X" {
				n, _ := strconv.Atoi(arg)
				delete(acked, n)
			}
		}
		cmd.Wait()
		checkAfterCrash(t, k, dir, acked, columns, exports, verified, &feed)
	}
	t.Logf("%d kill points, %d acknowledged batches, %d columns, %d rebuilds, %d bulk deletes, %d exports", killPoints, len(acked), len(columns), rebuilds, deletes, len(exports))
}

// checkAfterCrash reopens the data folder and checks everything the crash
// may not have broken, the kept row count included.
func checkAfterCrash(t *testing.T, k int, dir string, acked map[int]bool, columns, exports, verified map[string]bool, feed *crashFeed) {
	t.Helper()
	s, err := projectdata.Open(dir, nil)
	if err != nil {
		t.Fatalf("kill point %d: reopen: %v", k, err)
	}
	defer s.Close()
	raw := pdtest.Raw(t, dir, "acme")
	var integrity string
	st, _, err := raw.Prepare(`PRAGMA integrity_check`)
	if err != nil {
		t.Fatal(err)
	}
	for st.Step() {
		integrity += st.ColumnText(0)
	}
	st.Close()
	if integrity != "ok" {
		t.Fatalf("kill point %d: integrity_check: %s", k, integrity)
	}
	counts := map[int]int{}
	st, _, err = raw.Prepare(`SELECT batch, count(*) FROM events GROUP BY batch`)
	if err != nil {
		t.Fatal(err)
	}
	for st.Step() {
		counts[st.ColumnInt(0)] = st.ColumnInt(1)
	}
	st.Close()
	for b, n := range counts {
		if n != crashBatch {
			t.Fatalf("kill point %d: batch %d is half-applied: %d rows", k, b, n)
		}
	}
	for b := range acked {
		if counts[b] != crashBatch {
			t.Fatalf("kill point %d: acknowledged batch %d lost", k, b)
		}
	}
	rows := 0
	for _, n := range counts {
		rows += n
	}
	pdtest.CheckRowCounts(t, dir, "acme")
	feed.check(t, k, s, rows)
	list, err := s.ListRecords(ctx, "acme", "events", projectdata.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if *list.Total != int64(rows) {
		t.Fatalf("kill point %d: total %d, COUNT(*) %d", k, *list.Total, rows)
	}
	_, cols, err := s.ListColumns(ctx, "acme", "events")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[c.Name] = true
	}
	for c := range columns {
		if !have[c] {
			t.Fatalf("kill point %d: acknowledged column %s lost", k, c)
		}
	}
	page, err := s.ListExports(ctx, "acme", projectdata.ExportQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range page.Exports {
		listed[e.ID] = true
		if e.Status != "ready" {
			t.Fatalf("kill point %d: export %s is %s", k, e.ID, e.Status)
		}
		if verified[e.ID] {
			continue // a finished file is never written again
		}
		verified[e.ID] = true
		b, err := os.ReadFile(filepath.Join(dir, "acme", "exports", e.ID+".csv"))
		if err != nil {
			t.Fatalf("kill point %d: export %s: %v", k, e.ID, err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != e.SizeBytes || hex.EncodeToString(sum[:]) != e.SHA256 {
			t.Fatalf("kill point %d: export %s does not match its manifest", k, e.ID)
		}
	}
	for id := range exports {
		if !listed[id] {
			t.Fatalf("kill point %d: acknowledged export %s lost", k, id)
		}
	}
}
