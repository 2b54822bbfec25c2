//go:build unix

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// The pinned tools. versitygw v1.8.0 is a release that builds with this
// Go; Litestream's pin is the one examples/server documents.
const (
	litestreamPkg = "github.com/benbjohnson/litestream/cmd/litestream@v0.5.16"
	versitygwPkg  = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	s3Access      = "integration"
	s3Secret      = "integration-secret"
	s3Bucket      = "replicas"
)

// tools are the binaries TestMain builds.
var tools struct {
	litestream, versitygw, server string
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	cache := os.Getenv("PROJECTDATA_TOOLS")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return 0, err
		}
		cache = filepath.Join(dir, "projectdata-tools")
	}
	var err error
	if tools.litestream, err = goInstall(cache, litestreamPkg); err != nil {
		return 0, err
	}
	if tools.versitygw, err = goInstall(cache, versitygwPkg); err != nil {
		return 0, err
	}
	bin, err := os.MkdirTemp("", "projectdata-integration-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(bin)
	tools.server = filepath.Join(bin, "server")
	build := exec.Command("go", "build", "-o", tools.server, "./examples/server")
	build.Dir = ".." // the root module builds its own server
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("build server: %w", err)
	}
	return m.Run(), nil
}

// goInstall builds pkg@version into cache/<name>@<version>/ unless it is
// there already, and returns the binary's path.
func goInstall(cache, pkgAtVersion string) (string, error) {
	pkg, version, _ := strings.Cut(pkgAtVersion, "@")
	name := filepath.Base(pkg)
	dir := filepath.Join(cache, name+"@"+version)
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(os.Stderr, "integration: building %s (once; cached in %s)\n", pkgAtVersion, dir)
	cmd := exec.Command("go", "install", pkgAtVersion)
	cmd.Dir = os.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s: %w", pkgAtVersion, err)
	}
	return bin, nil
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls ok until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// s3Server is a versitygw process serving a folder over S3.
type s3Server struct {
	addr string
	root string // the folder it serves; the bucket is a folder in it
	cmd  *exec.Cmd
}

// startS3 runs versitygw over a new folder holding one bucket.
func startS3(t *testing.T) *s3Server {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, s3Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(tools.versitygw, "--access", s3Access, "--secret", s3Secret, "--port", addr, "posix", root)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s := &s3Server{addr: addr, root: root, cmd: cmd}
	waitFor(t, "versitygw", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return s
}

// stall stops versitygw (SIGSTOP) until the end of the test: its
// connections stay open and nothing is answered, as with a replica lost
// in the network.
func (s *s3Server) stall(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Signal(syscall.SIGCONT) })
}

// url is the replica URL of prefix in the bucket.
func (s *s3Server) url(prefix string) string {
	return "s3://" + s3Bucket + "/" + prefix + "?endpoint=http://" + s.addr + "&region=us-east-1&force-path-style=true"
}

// dbURL is the replica URL of one project's database under prefix.
func (s *s3Server) dbURL(prefix, slug string) string {
	return "s3://" + s3Bucket + "/" + prefix + "/" + slug + "/project.db?endpoint=http://" + s.addr + "&region=us-east-1&force-path-style=true"
}

// toolEnv is the environment of every tool run: the S3 credentials, and
// an AWS_CA_BUNDLE that would break Litestream's S3 client if it reached
// it (the server must keep it from its child).
func toolEnv() []string {
	return append(os.Environ(),
		"AWS_ACCESS_KEY_ID="+s3Access, "AWS_SECRET_ACCESS_KEY="+s3Secret,
		"AWS_CA_BUNDLE=/nonexistent/ca-bundle.pem")
}

// runServerCmd runs a one-shot server command and returns its stdout.
func runServerCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(tools.server, args...)
	cmd.Env = toolEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("server %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// serverProc is a running `server serve`.
type serverProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string

	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

var litestreamPID = regexp.MustCompile(`msg="litestream started" pid=(\d+)`)

// startServer runs `server serve` on dir with extra flags and waits until
// it answers.
func startServer(t *testing.T, dir string, extra ...string) *serverProc {
	t.Helper()
	return startServerIn(t, "", dir, extra...)
}

// startServerIn is startServer run in the working folder wd ("": the
// test's), with -data dir relative to it.
func startServerIn(t *testing.T, wd, dir string, extra ...string) *serverProc {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "-addr", addr, "-data", dir, "-litestream", tools.litestream}, extra...)
	s := &serverProc{t: t, cmd: exec.Command(tools.server, args...), addr: addr, done: make(chan struct{})}
	s.cmd.Dir = wd
	s.cmd.Env = toolEnv()
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.logs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
	}()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("server %s log:\n%s", addr, s.log())
		}
	})
	waitFor(t, "server "+addr, 20*time.Second, func() bool {
		select {
		case <-s.done:
			t.Fatalf("server exited:\n%s", s.log())
		default:
		}
		res, err := http.Get("http://" + addr + "/projects/nope")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	return s
}

func (s *serverProc) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// litestreamPIDs returns the pids of every Litestream child started so far.
func (s *serverProc) litestreamPIDs() []int {
	var pids []int
	for _, m := range litestreamPID.FindAllStringSubmatch(s.log(), -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// stop stops the server with SIGTERM (drain, close, Litestream's final
// sync) and waits for it.
func (s *serverProc) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.t.Fatalf("server did not stop:\n%s", s.log())
	}
}

// stopWithin stops the server with SIGTERM and returns how long it took
// to exit and its exit status; a stop past bound and a slack of 5 s (the
// store's close, the exit, a busy machine: a hang guard, not a measure of
// speed) fails the test.
func (s *serverProc) stopWithin(bound time.Duration) (time.Duration, int) {
	s.t.Helper()
	start := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(bound + time.Minute):
		s.t.Fatalf("server did not stop:\n%s", s.log())
	}
	took := time.Since(start)
	if took > bound+5*time.Second {
		s.t.Errorf("the stop took %v, past its bound %v and 5 s of slack", took, bound)
	}
	return took, s.cmd.ProcessState.ExitCode()
}

// kill ends the server at once, if it still runs.
func (s *serverProc) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// client speaks to a server with a token.
type client struct {
	t       *testing.T
	base    string
	token   string
	project string // the project's slug
}

func (s *serverProc) client(token string) *client {
	return &client{t: s.t, base: "http://" + s.addr, token: token, project: "acme"}
}

// do sends a request and decodes the envelope's data; it returns the
// status, and an error only when the request itself failed.
func (c *client) do(method, path string, body any, data any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error any             `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		return res.StatusCode, err
	}
	if data != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(env.Data, data); err != nil {
			return res.StatusCode, err
		}
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, env.Error)
	}
	return res.StatusCode, nil
}

// must is do that fails the test on any error.
func (c *client) must(method, path string, body any, data any) {
	c.t.Helper()
	if _, err := c.do(method, path, body, data); err != nil {
		c.t.Fatal(err)
	}
}

// batchSize is the number of rows of one batch: one insert, one
// transaction.
const batchSize = 20

// createBatches creates table batches(batch INTEGER, i INTEGER).
func (c *client) createBatches() {
	c.must("POST", "/projects/"+c.project+"/table", map[string]any{
		"table_name": "batches",
		"columns":    []map[string]any{{"column_name": "batch", "column_type": "INTEGER"}, {"column_name": "i", "column_type": "INTEGER"}},
	}, nil)
}

// insertBatch inserts batch n; nil means it was acknowledged.
func (c *client) insertBatch(n int) error {
	rows := make([]map[string]any, batchSize)
	for i := range rows {
		rows[i] = map[string]any{"batch": n, "i": i}
	}
	_, err := c.do("POST", "/projects/"+c.project+"/records/batches", rows, nil)
	return err
}

// batchCounts returns how many rows of each batch the server holds.
func (c *client) batchCounts() map[int]int {
	var res struct {
		Rows []struct {
			Batch int `json:"batch"`
			N     int `json:"n"`
		} `json:"rows"`
	}
	c.must("POST", "/projects/"+c.project+"/query", map[string]any{"sql": "SELECT batch, count(*) AS n FROM batches GROUP BY batch", "limit": 1000}, &res)
	out := map[int]int{}
	for _, r := range res.Rows {
		out[r.Batch] = r.N
	}
	return out
}

// integrityCheck runs PRAGMA integrity_check on a project database.
func integrityCheck(t *testing.T, path string) string {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _, err := c.Prepare(`PRAGMA integrity_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Step() {
		t.Fatal(st.Err())
	}
	return st.ColumnText(0)
}
