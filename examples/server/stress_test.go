package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/projectdata/projectdata"
)

var stressDuration = flag.Duration("stress", 0, "run the bounded-resources stress test this long at full strength (the issue asks for 60s); 0: a quick, light run")

// stressTally is what one client saw.
type stressTally struct {
	mu        sync.Mutex
	latencies []time.Duration
	statuses  map[int]int
	busyNoRA  int   // 503 without Retry-After
	failures  []any // transport errors while the run was on
}

func (s *stressTally) add(status int, retryAfter string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.statuses == nil {
		s.statuses = map[int]int{}
	}
	s.statuses[status]++
	s.latencies = append(s.latencies, d)
	if status == http.StatusServiceUnavailable && retryAfter == "" {
		s.busyNoRA++
	}
}

func (s *stressTally) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, err)
}

// percentile is the latency under which p percent of the requests ended.
func (s *stressTally) percentile(p int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, len(l)*p/100)]
}

// stressServerLog counts the server's log lines by level and keeps its
// errors.
type stressServerLog struct {
	mu      sync.Mutex
	levels  map[string]int
	aborted int
	errors  []string
}

func (l *stressServerLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		for _, level := range []string{"DEBUG", "INFO", "WARN", "ERROR"} {
			if strings.Contains(line, " level="+level+" ") {
				l.levels[level]++
			}
		}
		if strings.Contains(line, "msg=client_aborted") {
			l.aborted++
		}
		if strings.Contains(line, " level=ERROR ") && len(l.errors) < 20 {
			l.errors = append(l.errors, line)
		}
		l.mu.Unlock()
	}
}

// TestStressBoundedResources runs the hostile clients of the bounded-
// resources issue (items 1 to 7, and 8: large bodies sent slowly) at once
// against one server process (this package's serve command, default
// options), while a well-behaved client reads by id and inserts, in turn,
// in the attacked project and another one, each with a token of its own
// (the attacks use the admin's). It asserts that no answer is a 5xx but a
// 503 with Retry-After, that only the attacked project's well-behaved
// client may see 503s, and that the server logged no error; it reports
// the server's peak RSS and each well-behaved client's latencies. Quick
// and light by default; -stress=60s runs it at full strength (the flag
// after the package: go test -run TestStressBoundedResources -timeout 10m
// -v ./examples/server -stress=60s).
func TestStressBoundedResources(t *testing.T) {
	duration, strength := *stressDuration, 4
	if duration == 0 {
		duration, strength = 4*time.Second, 1 // longer than BodyWait (2 s), for item 8
	}
	dir := filepath.Join(t.TempDir(), "data")
	tokens := stressData(t, dir, strength)

	addr := freeAddr(t)
	cmd := serverCmd("serve", "-addr", addr, "-data", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serverLog := &stressServerLog{levels: map[string]int{}}
	logRead := make(chan struct{})
	go func() { serverLog.read(stderr); close(logRead) }()
	stopped := false
	stopServer := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			<-logRead
			cmd.Wait()
		}
	}
	defer stopServer()
	waitUp(t, addr)
	base := "http://" + addr

	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var (
		wg            sync.WaitGroup
		serverErrors  atomic.Int64 // 5xx other than 503, or 503 without Retry-After, to any client
		attackAnswers sync.Map     // name → *stressTally
		tallies       = map[string]*stressTally{"same": {}, "other": {}}
	)
	send := func(client *http.Client, method, path, token string, body []byte) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 && (res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "") {
			serverErrors.Add(1)
			t.Logf("%s %.60s: %d", method, path, res.StatusCode)
		}
		return res.StatusCode, res.Header.Get("Retry-After"), nil
	}

	// The well-behaved clients: read by id and insert one row, in turn,
	// each on its own connection, made before the attack starts.
	for name, slug := range map[string]string{"same": "acme", "other": "other"} {
		client := &http.Client{}
		if status, _, err := send(client, "GET", "/projects/"+slug+"/records/items/1", tokens[slug+" own"], nil); err != nil || status != 200 {
			t.Fatalf("%s project before the attack: %d %v", name, status, err)
		}
		wg.Go(func() {
			tally := tallies[name]
			for i := 0; ctx.Err() == nil; i++ {
				method, path, body := "GET", fmt.Sprintf("/projects/%s/records/items/%d", slug, i%1000+1), []byte(nil)
				if i%2 == 1 {
					method, path, body = "POST", "/projects/"+slug+"/records/items", []byte(`{"name":"well-behaved","n":1}`)
				}
				start := time.Now()
				status, retryAfter, err := send(client, method, path, tokens[slug+" own"], body)
				if err != nil {
					if ctx.Err() == nil {
						tally.fail(err)
					}
					continue
				}
				tally.add(status, retryAfter, time.Since(start))
			}
		})
	}

	attack := func(name string, n int, method, path string, body []byte) {
		tally := &stressTally{}
		attackAnswers.Store(name, tally)
		for range n * strength {
			wg.Go(func() {
				client := &http.Client{}
				for ctx.Err() == nil {
					start := time.Now()
					if status, retryAfter, err := send(client, method, path, tokens["acme"], body); err == nil {
						tally.add(status, retryAfter, time.Since(start))
					}
				}
			})
		}
	}
	query := func(sql string) []byte { return fmt.Appendf(nil, `{"sql":%q}`, sql) }

	// Item 1: a list of large rows, each < six bytes once encoded.
	attack("1 list of large rows", 1, "GET", "/projects/acme/records/lt?limit=1000", nil)
	// Item 2: 8 MiB bodies of empty objects, as params and as rows.
	attack("2 8 MiB of params", 1, "POST", "/projects/acme/query", []byte(`{"sql":"SELECT 1","params":[`+strings.Repeat(`{},`, 8<<20/3-20)+`{}]}`))
	attack("2 8 MiB of rows", 1, "POST", "/projects/acme/records/items", []byte(`[`+strings.Repeat(`{},`, 8<<20/3-5)+`{}]`))
	// Item 3: statements long to parse and plan, and deeper than SQLite's stack.
	attack("3 long to plan", 1, "POST", "/projects/acme/query", query("SELECT 1 WHERE 1 IN ("+strings.Repeat("1+2, ", 19990)+"0)"))
	attack("3 too deep", 1, "POST", "/projects/acme/query", query(stressCTEChain(3000)))
	// Item 4: a crowd of budget-busting queries on the attacked project.
	attack("4 budget busters", 5, "POST", "/projects/acme/query", query(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`))
	// Item 6: queries that make SQLite's heap grow to its cap.
	var aggs []string
	for i := range 20 {
		aggs = append(aggs, fmt.Sprintf("length(group_concat(v || '%d'))", i))
	}
	attack("6 SQLite heap", 1, "POST", "/projects/acme/query", query(`SELECT `+strings.Join(aggs, ", ")+` FROM (SELECT printf('%.*c', 100000, 'x') AS v FROM generate_series(1, 35))`))
	// Item 7: results whose raw size fits the budget, but not once encoded.
	attack("7 encoded size", 1, "POST", "/projects/acme/query", query(`SELECT printf('%.*c', 1000000, '<') AS s FROM generate_series(1, 3)`))
	// Item 5: idle connections, and bodies their clients abandon.
	var idle []net.Conn
	for range 100 * strength {
		if c, err := net.Dial("tcp", addr); err == nil {
			idle = append(idle, c)
		}
	}
	var abandoned atomic.Int64
	for range strength {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				fmt.Fprintf(c, "POST /projects/acme/records/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[{", tokens["acme"])
				time.Sleep(10 * time.Millisecond)
				c.Close()
				abandoned.Add(1)
			}
		})
	}

	// Item 8: large bodies sent slowly, each holding its share of the
	// request-body budget for as long as the server reads it: 20 of 8 MiB
	// claim more than the whole budget (128 MiB).
	var slowBodies atomic.Int64
	for range 20 * strength {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				slowBodies.Add(1)
				fmt.Fprintf(c, "POST /projects/acme/records/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n[", tokens["acme"], 8<<20)
				for ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
					if _, err := c.Write([]byte(strings.Repeat(`{"name":"slow"},`, 64))); err != nil {
						break // the server gave up on it
					}
				}
				c.Close()
			}
		})
	}

	wg.Wait()
	rss := procStatus(cmd.Process.Pid, "VmHWM")
	for _, c := range idle {
		c.Close()
	}
	stopServer()

	t.Logf("%s at strength %d against one server process (default options): peak RSS %s", duration, strength, rss)
	attackAnswers.Range(func(name, v any) bool {
		tally := v.(*stressTally)
		t.Logf("attack %s: statuses %v, p50 %s", name, tally.statuses, tally.percentile(50))
		return true
	})
	t.Logf("attack 5: %d idle connections, %d bodies abandoned; the server logged %d client_aborted, lines by level %v", len(idle), abandoned.Load(), serverLog.aborted, serverLog.levels)
	t.Logf("attack 8: %d slow bodies of 8 MiB", slowBodies.Load())
	for _, name := range []string{"same", "other"} {
		tally := tallies[name]
		t.Logf("well-behaved client, %s project: %d requests, statuses %v, p50 %s, p99 %s, max %s",
			name, len(tally.latencies), tally.statuses, tally.percentile(50), tally.percentile(99), tally.percentile(100))
		if tally.busyNoRA > 0 {
			t.Errorf("%s project: %d answers 503 without Retry-After", name, tally.busyNoRA)
		}
		for status := range tally.statuses {
			ok := status == http.StatusOK || status == http.StatusCreated || name == "same" && status == http.StatusServiceUnavailable
			if !ok {
				t.Errorf("%s project: the well-behaved client got %d", name, status)
			}
		}
		if len(tally.failures) > 0 {
			t.Errorf("%s project: the well-behaved client's requests failed: %v", name, tally.failures)
		}
		if len(tally.latencies) == 0 {
			t.Errorf("%s project: the well-behaved client got no answer", name)
		}
	}
	if n := serverErrors.Load(); n > 0 {
		t.Errorf("%d answers were 5xx (but 503 with Retry-After)", n)
	}
	// The bound on memory with default options (a figure of the
	// machine's memory, not of its speed).
	if kb, err := strconv.Atoi(strings.TrimSuffix(rss, " kB")); err == nil && kb > maxStressRSS>>10 {
		t.Errorf("peak RSS %s, over %d MB", rss, maxStressRSS>>20)
	}
	if len(serverLog.errors) > 0 {
		t.Errorf("the server logged errors:\n%s", strings.Join(serverLog.errors, "\n"))
	}
}

// stressData creates, in the data folder dir, projects acme and other,
// each with table items of 1,000 rows, and in acme table lt of rows of 1 MB
// (quick run) or 8 MB (full strength) of <. It returns each project's
// admin token, and by "SLUG own" a write token of each.
func stressData(t *testing.T, dir string, strength int) map[string]string {
	t.Helper()
	store, err := projectdata.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	tokens := map[string]string{}
	for _, slug := range []string{"acme", "other"} {
		_, tok, err := store.CreateProject(ctx, slug, "")
		if err != nil {
			t.Fatal(err)
		}
		tokens[slug] = tok.Token
		// The well-behaved clients' own tokens (the attacks use the admin's).
		own, err := store.CreateToken(ctx, slug, projectdata.NewToken{Name: "well-behaved"})
		if err != nil {
			t.Fatal(err)
		}
		tokens[slug+" own"] = own.Token
		if _, _, err := store.CreateTable(ctx, slug, projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}, {Name: "n", Type: "INTEGER"}}}); err != nil {
			t.Fatal(err)
		}
		rows := make([]projectdata.Row, 1000)
		for i := range rows {
			rows[i] = projectdata.Row{"name": fmt.Sprintf("item %d", i), "n": i}
		}
		if _, err := store.Insert(ctx, slug, "items", rows); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "lt", Columns: []projectdata.ColumnDef{{Name: "s"}}}); err != nil {
		t.Fatal(err)
	}
	rows, size := 10, 1<<20
	if strength > 1 {
		rows, size = 60, 8<<20
	}
	big := strings.Repeat("<", size)
	for range rows {
		if _, err := store.Insert(ctx, "acme", "lt", []projectdata.Row{{"s": big}}); err != nil {
			t.Fatal(err)
		}
	}
	return tokens
}

// stressCTEChain is a statement of n common table expressions, each
// reading the one before: long to plan, quick to run.
func stressCTEChain(n int) string {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT 1 AS x)")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, ", c%d AS (SELECT x FROM c%d)", i, i-1)
	}
	fmt.Fprintf(&b, " SELECT x FROM c%d", n-1)
	return b.String()
}

// procStatus is a field of /proc/PID/status (such as VmHWM, the peak
// resident memory), where the system tells.
// maxStressRSS is the most memory the server may take under the attacks.
const maxStressRSS = 512 << 20

func procStatus(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, field+":") {
			return strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	return "unknown"
}
