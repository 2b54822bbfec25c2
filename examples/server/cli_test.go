package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestMain lets the tests run the server as a separate process: the test
// binary runs main when told so by the environment.
func TestMain(m *testing.M) {
	if os.Getenv("PROJECTDATA_TEST_RUN_SERVER") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverCmd is the server run as its own process with args.
func serverCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "PROJECTDATA_TEST_RUN_SERVER=1")
	return cmd
}

// runServerCmd runs the server process to its end and returns its output
// and exit status. A process that has not ended after a minute (a command
// that should have failed at once serves instead) is killed and the test
// fails.
func runServerCmd(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := serverCmd(args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Errorf("server %q still ran after a minute; killed", args)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func TestHelpListsEveryCommandAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			out, errOut, status := runServerCmd(t, args...)
			is.Equal(status, 0)
			is.Equal(errOut, "")
			for _, c := range commands {
				is.True(strings.Contains(out, "  server "+c.name)) // every command listed
			}
		})
	}
	t.Run("CommandHelp", func(t *testing.T) {
		is := is.New(t)
		for _, args := range [][]string{{"serve", "-h"}, {"help", "serve"}} {
			out, _, status := runServerCmd(t, args...)
			is.Equal(status, 0)
			is.True(strings.HasPrefix(out, "usage: server serve "))
			is.True(strings.Contains(out, "-metrics"))
		}
		out, _, status := runServerCmd(t, "token", "revoke", "--help")
		is.Equal(status, 0)
		is.True(strings.Contains(out, "usage: server token revoke [-data DIR] SLUG TOKEN_ID"))
	})
}

// TestSynopsesListEveryFlag: help's synopsis of each command names every
// flag that the command's -h describes.
func TestSynopsesListEveryFlag(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for _, c := range commands {
		if c.run == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			c.run(context.Background(), []string{"-h"}, &out, io.Discard)
			for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
				if !regexp.MustCompile(`\[?-` + m[1] + `\b`).MatchString(c.synopsis) {
					t.Errorf("the synopsis %q lacks -%s", c.synopsis, m[1])
				}
			}
		})
	}
}

func TestUsageErrorsAreReportedOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "-bogus"}, "-bogus"},
		{[]string{"serve", "-max-conns", "x"}, "-max-conns"},
		{[]string{"serve", "-max-conns", "0"}, "-max-conns"},
		{[]string{"serve", "-shutdown-delay", "-1s"}, "-shutdown-delay"},
		{[]string{"serve", "-stop-timeout", "0"}, `invalid value "0s" for flag -stop-timeout: must be positive`},
		{[]string{"serve", "-stop-timeout", "-1s"}, "-stop-timeout"},
		{[]string{"serve", "-drain", "0"}, `invalid value "0s" for flag -drain: must be positive`},
		{[]string{"serve", "-drain", "-1s"}, "-drain"},
		{[]string{"serve", "-drain", "26s"}, `invalid value "26s" for flag -drain: must be within -stop-timeout (25s)`},
		// Checked before Litestream is looked for: there is none here.
		{[]string{"serve", "-replica", "file:///r", "-litestream", "/nonexistent", "-stop-timeout", "10s", "-drain", "9.5s"},
			`invalid value "9.5s" for flag -drain: must leave Litestream's final sync at least 1s of -stop-timeout (10s)`},
		{[]string{"project", "create"}, "project create: missing SLUG; usage: server project create [-data DIR] [-name NAME] SLUG"},
		{[]string{"token", "revoke", "-data", "d"}, "token revoke: missing SLUG TOKEN_ID; usage: server token revoke"},
		{[]string{"token", "list", "acme", "extra"}, `token list: unexpected argument "extra"; usage: server token list [-data DIR] SLUG`},
		{[]string{"version", "x"}, `version: unexpected argument "x"; usage: server version`},
		{[]string{"token", "create", "-role", "", "acme"}, `invalid value "" for flag -role`},
		// Checked before the data folder is opened: "d" does not exist.
		{[]string{"token", "create", "-data", "d", "-role", "owner", "acme"}, `invalid value "owner" for flag -role: want admin, write or read`},
		{[]string{"token", "create", "-data", "d", "-role", "READ", "acme"}, `invalid value "READ" for flag -role`},
		{[]string{"project", "sync", "-timeout", "0", "acme"}, "-timeout"},
		{[]string{"serve", "-data", ""}, `invalid value "" for flag -data: want a folder`},
		{[]string{"project", "list", "-data", ""}, `invalid value "" for flag -data: want a folder`},
		{[]string{"token", "create", "-data", "", "acme"}, `invalid value "" for flag -data: want a folder`},
		{[]string{"project", "sync", "-timeout", "-1s", "acme"}, "-timeout"},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"token", "list", "-data"}, "-data"},
		{[]string{"token", "revoke", "acme"}, "token revoke: missing TOKEN_ID; usage: server token revoke"},
		{[]string{"frobnicate"}, "frobnicate"},
		{[]string{"project", "restore", "acme"}, "-from is required"},
		{[]string{"project", "restore", "-from", "x.sqlite", "-at", "yesterday", "acme"}, "RFC 3339"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			is := is.New(t)
			out, errOut, status := runServerCmd(t, c.args...)
			is.Equal(status, 2)
			is.Equal(out, "")
			is.Equal(strings.Count(errOut, c.says), 1) // once, not by flag and again by main
			is.Equal(strings.Count(errOut, "\n"), 1)
		})
	}
}

func TestVersion(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(context.Background(), []string{"version"}, &out, io.Discard))
	is.True(strings.Contains(out.String(), "go       go1."))
	for _, flag := range []string{"--version", "-version"} {
		var as bytes.Buffer
		is.NoErr(run(context.Background(), []string{flag}, &as, io.Discard))
		is.Equal(as.String(), out.String()) // as the version command
	}

	text := versionText(&debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/projectdata/projectdata", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "9abda26c0ffee"},
			{Key: "vcs.time", Value: "2026-11-22T20:29:37Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	})
	is.Equal(text, "server v0.3.0\nmodule   github.com/projectdata/projectdata\nrevision 9abda26c0ffee (2026-11-22T20:29:37Z, modified)\ngo       go1.26.8\n")
	text = versionText(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/projectdata/projectdata", Version: "(devel)"}})
	is.True(strings.Contains(text, "revision unknown (built without VCS information)\n"))
}

func TestCommandsOtherThanServeCreateNoDataFolder(t *testing.T) {
	for _, args := range [][]string{
		{"project", "list"},
		{"project", "create", "acme"},
		{"token", "create", "acme"},
		{"token", "list", "acme"},
		{"token", "revoke", "acme", "1"},
		{"project", "restore", "-from", "snapshot.sqlite", "acme"},
		{"project", "sync", "acme"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			dir := filepath.Join(t.TempDir(), "data")
			var out, errOut bytes.Buffer
			err := run(context.Background(), append(args, "-data", dir), &out, &errOut)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "does not exist"))
			is.Equal(out.Len(), 0)
			_, err = os.Stat(dir)
			is.True(os.IsNotExist(err)) // not created
		})
	}
}

// cliIn returns a runner of the command line on the data folder dir: it
// runs the command its arguments give, fails the test if it fails, and
// returns what it printed on stdout.
func cliIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append(args, "-data", dir), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
}

func TestProjectAndTokenLists(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx := context.Background()
	cli := cliIn(t, dir)
	admin := cli("project", "create", "-name", "Acme Inc", "acme")
	cli("project", "create", "beta")
	reader := cli("token", "create", "-role", "read", "-name", "ci", "acme")

	projects := strings.Split(strings.TrimSpace(cli("project", "list")), "\n")
	is.Equal(len(projects), 3)
	is.Equal(strings.Fields(projects[0]), []string{"SLUG", "NAME", "CREATED"})
	is.True(strings.HasPrefix(projects[1], "acme  "))
	is.True(strings.Contains(projects[1], "Acme Inc"))
	is.True(strings.HasPrefix(projects[2], "beta  "))

	list := cli("token", "list", "acme")
	is.True(!strings.Contains(list, "pat_")) // never a secret
	is.True(!strings.Contains(list, strings.TrimSpace(admin)[4:12]))
	lines := strings.Split(strings.TrimSpace(list), "\n")
	is.Equal(len(lines), 3)
	is.Equal(strings.Fields(lines[0]), []string{"ID", "NAME", "ROLE", "CREATED", "EXPIRES", "REVOKED", "LAST_USED"})
	ci := strings.Fields(lines[2])
	is.Equal(ci[0:3], []string{"2", "ci", "read"})
	is.Equal(ci[5], "-") // not revoked

	out := cli("token", "revoke", "acme", "2")
	is.True(strings.HasPrefix(out, "revoked token 2 (ci, read) at "))
	ci = strings.Fields(strings.Split(strings.TrimSpace(cli("token", "list", "acme")), "\n")[2])
	is.True(ci[5] != "-")
	_ = reader

	var errOut bytes.Buffer
	err := run(ctx, []string{"token", "revoke", "-data", dir, "acme", "99"}, io.Discard, &errOut)
	is.True(errors.Is(err, projectdata.ErrTokenNotFound))
	err = run(ctx, []string{"token", "list", "-data", dir, "nope"}, io.Discard, &errOut)
	is.True(errors.Is(err, projectdata.ErrProjectNotFound))
}

// TestTokenListPrintsAsItReads: token list prints its first lines before
// it has read the last tokens: a token created (by another Store on the
// folder) once the first lines are out is listed, at the end.
func TestTokenListPrintsAsItReads(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx := context.Background()
	cliIn(t, dir)("project", "create", "acme")
	s, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	for i := range 600 {
		_, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: "session-" + strconv.Itoa(i)})
		is.NoErr(err)
	}
	out := &firstWriteHook{fn: func() {
		_, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: "late"})
		is.NoErr(err)
	}}
	is.NoErr(run(ctx, []string{"token", "list", "-data", dir, "acme"}, out, io.Discard))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	is.Equal(len(lines), 1+1+600+1) // the header, the admin token, the sessions, late
	is.Equal(strings.Fields(lines[len(lines)-1])[1], "late")
	is.True(out.writes > 2) // in blocks
}

// firstWriteHook is a buffer that calls fn before its first write.
type firstWriteHook struct {
	bytes.Buffer
	fn     func()
	writes int
}

func (f *firstWriteHook) Write(p []byte) (int, error) {
	if f.writes++; f.writes == 1 {
		f.fn()
	}
	return f.Buffer.Write(p)
}

// TestProjectListShowsTheReadableProjects: a damaged project does not hide
// the others from the operator; the command lists them, names the damaged
// one on stderr and exits 1.
func TestProjectListShowsTheReadableProjects(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	cli := cliIn(t, dir)
	cli("project", "create", "acme")
	cli("project", "create", "zeta")
	is.NoErr(os.MkdirAll(filepath.Join(dir, "bad"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "bad", "project.db"), []byte("not a database, but long enough to be read as one"), 0o644))

	out, errOut, status := runServerCmd(t, "project", "list", "-data", dir)
	is.Equal(status, 1)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	is.Equal(len(lines), 3) // the header, acme and zeta
	is.True(strings.HasPrefix(lines[1], "acme  "))
	is.True(strings.HasPrefix(lines[2], "zeta  "))
	is.True(strings.Contains(errOut, `project "bad"`))
}

// TestListingsQuoteNamesATerminalWouldNotShow: a name with a newline or an
// escape sequence, which the Store now refuses but a database of an older
// release may hold, is printed quoted, so that it can neither forge a row
// nor drive the operator's terminal.
func TestListingsQuoteNamesATerminalWouldNotShow(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	cli := cliIn(t, dir)
	evil := "Evil\nforged  Row  2026-01-01T00:00:00.000Z\x1b[31mRED"
	err := run(context.Background(), []string{"project", "create", "-data", dir, "-name", evil, "acme"}, io.Discard, io.Discard)
	is.True(errors.Is(err, projectdata.ErrInvalidProjectName)) // refused now
	cli("project", "create", "acme")
	names := []string{"ci\nforged", "\x1b[2J", "   ", "tab\there"}
	for range names {
		cli("token", "create", "acme")
	}
	// As an older release stored them.
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `UPDATE _pd_project SET name = 'Evil' || char(10) || 'forged  Row  2026-01-01T00:00:00.000Z' || char(27) || '[31mRED'`)
	pdtest.Exec(t, raw, `UPDATE _pd_tokens SET name = CASE id WHEN 2 THEN 'ci' || char(10) || 'forged' WHEN 3 THEN char(27) || '[2J'
		WHEN 4 THEN '   ' WHEN 5 THEN 'tab' || char(9) || 'here' ELSE name END`)
	raw.Close()

	projects := cli("project", "list")
	is.Equal(strings.Count(projects, "\n"), 2) // header and one row
	is.True(strings.Contains(projects, strconv.Quote(evil)))
	tokens := cli("token", "list", "acme")
	is.Equal(strings.Count(tokens, "\n"), 6) // header and five rows
	for _, name := range names {
		is.True(strings.Contains(tokens, strconv.Quote(name)))
	}
	is.True(!strings.ContainsAny(projects+tokens, "\x1b\t"))
	is.True(strings.HasPrefix(cli("token", "revoke", "acme", "2"), `revoked token 2 ("ci\nforged", write) at `))
}

func TestListed(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Acme Inc", "Acme Inc"},
		{"Café · 東京", "Café · 東京"},
		{"a\nb", `"a\nb"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"bidi\u202eevil", `"bidi\u202eevil"`},
		{"\xff", `"\xff"`},
		{" padded", `" padded"`},
		{"", `""`},
		{`"quoted"`, `"\"quoted\""`},
	} {
		if got := listed(tc.name); got != tc.want {
			t.Errorf("listed(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServer starts the server process and returns the first line it
// prints on stdout; the process is stopped (SIGTERM) at the end of the test.
func startServer(t *testing.T, args ...string) (cmd *exec.Cmd, stdout *bufio.Reader) {
	t.Helper()
	cmd = serverCmd(args...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return cmd, bufio.NewReader(pipe)
}

// waitUp waits until the server at addr answers its health check.
func waitUp(t *testing.T, addr string) {
	t.Helper()
	for range 500 {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the server did not come up")
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func TestFirstStartTokenPrintedAfterBind(t *testing.T) {
	t.Run("PrintedOnceTheListenerIsBound", func(t *testing.T) {
		is := is.New(t)
		addr := freeAddr(t)
		_, stdout := startServer(t, "-addr", addr, "-data", filepath.Join(t.TempDir(), "data"))
		line, err := stdout.ReadString('\n')
		is.NoErr(err)
		is.Equal(line, "created project demo; its admin token (shown once):\n")
		token, err := stdout.ReadString('\n')
		is.NoErr(err)
		is.True(tokenLine.MatchString(token))
		c, err := net.Dial("tcp", addr) // bound before the token was printed
		is.NoErr(err)
		c.Close()
	})
	t.Run("NotPrintedWhenBindingFails", func(t *testing.T) {
		is := is.New(t)
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		is.NoErr(err)
		defer taken.Close()
		data := filepath.Join(t.TempDir(), "data")
		out, errOut, status := runServerCmd(t, "-addr", taken.Addr().String(), "-data", data)
		is.Equal(status, 1)
		is.Equal(out, "")
		is.True(strings.Contains(errOut, "address already in use"))
		_, err = os.Stat(data)
		is.True(os.IsNotExist(err)) // no data folder, no project demo
	})
}

// TestServeRefusesAnEmptyAddress: -addr "" would serve on every interface
// and a random port, and print the demo admin token.
func TestServeRefusesAnEmptyAddress(t *testing.T) {
	is := is.New(t)
	data := filepath.Join(t.TempDir(), "data")
	out, errOut, status := runServerCmd(t, "-addr", "", "-data", data)
	is.Equal(status, 2)
	is.Equal(out, "") // no token
	is.True(strings.Contains(errOut, `invalid value "" for flag -addr`))
	_, err := os.Stat(data)
	is.True(os.IsNotExist(err))
}

func TestRevokedTokenRefusedByRunningServer(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	_, stdout := startServer(t, "-addr", addr, "-data", dir)
	stdout.ReadString('\n')
	admin, err := stdout.ReadString('\n')
	is.NoErr(err)
	admin = strings.TrimSpace(admin)
	waitUp(t, addr)

	var out bytes.Buffer
	is.NoErr(run(context.Background(), []string{"token", "create", "-data", dir, "-role", "read", "demo"}, &out, io.Discard))
	reader := strings.TrimSpace(out.String())
	is.Equal(get(t, "http://"+addr+"/projects/demo", reader), 200)

	// Revoked by this process while the server process runs on the folder.
	out.Reset()
	is.NoErr(run(context.Background(), []string{"token", "revoke", "-data", dir, "demo", "2"}, &out, io.Discard))
	deadline := time.Now().Add(time.Second) // CONTRACT §15: refused within 1 s
	for get(t, "http://"+addr+"/projects/demo", reader) != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the running server still accepts the revoked token after 1 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	is.Equal(get(t, "http://"+addr+"/projects/demo", admin), 200) // other tokens still work
}

func TestServeMetricsFlag(t *testing.T) {
	for _, c := range []struct {
		flag string
		want int
	}{{"", 200}, {"-metrics=false", 404}} {
		t.Run("Metrics"+c.flag, func(t *testing.T) {
			is := is.New(t)
			addr := freeAddr(t)
			args := []string{"serve", "-addr", addr, "-data", t.TempDir()}
			if c.flag != "" {
				args = append(args, c.flag)
			}
			startServer(t, args...)
			waitUp(t, addr)
			is.Equal(get(t, "http://"+addr+"/metrics", ""), c.want)
		})
	}
}

// TestVersionOfABuiltBinary builds the server as a user would and checks
// that version reports the checked-out revision.
func TestVersionOfABuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server; run without -short")
	}
	is := is.New(t)
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	top, err2 := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil || err2 != nil {
		t.Skip("not in a git checkout")
	}
	if info, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !info.IsDir() {
		t.Skip("a git worktree: the go command stamps VCS information only in a checkout whose .git is a folder")
	}
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Stderr = os.Stderr
	is.NoErr(build.Run())
	out, err := exec.Command(bin, "version").Output()
	is.NoErr(err)
	is.True(strings.Contains(string(out), "revision "+strings.TrimSpace(string(head))))
	is.True(strings.Contains(string(out), "module   github.com/projectdata/projectdata\n"))
}

func TestShutdownTurnsHealthCheck503(t *testing.T) {
	is := is.New(t)
	store, err := projectdata.Open(t.TempDir(), nil)
	is.NoErr(err)
	defer store.Close()
	h := httpapi.New(store, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- runServer(ctx, ln, h, slog.New(slog.DiscardHandler), defaultLimits) }()
	waitUp(t, ln.Addr().String())
	cancel() // as SIGTERM would
	is.NoErr(<-served)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	is.Equal(rec.Code, 503) // the store is still open, but the server is shutting down
}
