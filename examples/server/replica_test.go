package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

func TestParseReplicaURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"s3://bucket/path?endpoint=http://127.0.0.1:7070&region=us-east-1&force-path-style=true", true},
		{"s3://bucket", true},
		{"file:///var/backups/projects", true},
		{"s3:///path", false},                // no bucket
		{"file://host/path", false},          // not local
		{"file://relative/path", false},      // host "relative"
		{"gs://bucket/path", false},          // not supported here
		{"/var/backups/projects", false},     // a path, not a URL
		{"s3://bucket/%zz", false},           // malformed
		{"https://example.com/x", false},     // not a replica scheme
		{"file:relative", false},             // not absolute
		{"", false},                          // empty
		{"s3://bucket/a b?endpoint=x", true}, // spaces are the URL's business
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := parseReplicaURL(tc.url)
			if (err == nil) != tc.ok {
				t.Fatalf("parseReplicaURL(%q) error = %v, want ok=%v", tc.url, err, tc.ok)
			}
		})
	}
}

// TestReplicaURLPasswordsAreNotQuoted: a replica URL that cannot be used
// is quoted in the error without its password, whatever is wrong with it,
// by serve -replica and by project restore -from.
func TestReplicaURLPasswordsAreNotQuoted(t *testing.T) {
	for _, raw := range []string{
		"s3://AKIAXX:SECRETPW@/p",                 // no bucket
		"file://user:SECRETPW@host/p",             // not local
		"http://user:SECRETPW@example.com/p",      // not a replica scheme
		"s3://AKIAXX:SECRETPW%zz@bucket/p",        // bad escape: does not parse
		"s3://AKIAXX:SECRET/PW@bucket/p",          // a slash in the password: does not parse
		"s3://AKIAXX:SECRETPW@bucket/p?x=%zz#%zz", // bad escape after the user information
	} {
		t.Run(raw, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			dir := t.TempDir()
			for _, args := range [][]string{
				{"serve", "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"), "-replica", raw},
				{"project", "restore", "-data", dir, "-from", raw, "acme"},
			} {
				var errOut bytes.Buffer
				err := run(ctx, args, io.Discard, &errOut)
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), "replica URL")) // refused as a URL
				is.True(!strings.Contains(err.Error()+errOut.String(), "SECRET"))
			}
		})
	}
}

// TestLitestreamConfig checks the generated configuration: a recursive
// directory watch of the data folder for project.db files, the replica
// URL kept byte for byte, state and socket outside the projects.
func TestLitestreamConfig(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	u, err := parseReplicaURL("s3://bkt/node1?endpoint=http://127.0.0.1:7070&region=us-east-1&force-path-style=true")
	is.NoErr(err)
	config, socket, err := writeLitestreamConfig(dir, u)
	is.NoErr(err)
	info, err := os.Stat(config)
	is.NoErr(err)
	is.Equal(info.Mode().Perm(), os.FileMode(0o600)) // it may hold credentials
	b, err := os.ReadFile(config)
	is.NoErr(err)
	var cfg litestreamConfig
	is.NoErr(json.Unmarshal(b, &cfg)) // JSON is YAML
	is.Equal(len(cfg.DBs), 1)
	db := cfg.DBs[0]
	is.Equal(db.Dir, dir)
	is.Equal(db.Pattern, "project.db")
	is.True(db.Recursive && db.Watch)
	is.Equal(db.Replica.URL, u.String())
	is.Equal(db.MetaDir, filepath.Join(dir, ".litestream", "meta"))
	is.True(cfg.Socket.Enabled)
	is.Equal(cfg.Socket.Path, socket)
	is.True(strings.HasPrefix(socket, filepath.Join(dir, ".litestream")))

	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	is.NoErr(os.MkdirAll(long, 0o755))
	_, socket, err = writeLitestreamConfig(long, u)
	is.NoErr(err)
	is.True(len(socket) <= maxSocketPath) // a Unix socket path has a limit
}

// TestChildEnvironmentIsClean: the child gets its credentials, not the
// rest of the server's environment (AWS_CA_BUNDLE breaks Litestream's S3
// client).
func TestChildEnvironmentIsClean(t *testing.T) {
	is := is.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CA_BUNDLE", "/etc/ca.pem")
	t.Setenv("SOMETHING_ELSE", "x")
	env := strings.Join(childEnv(), "\n")
	is.True(strings.Contains(env, "AWS_ACCESS_KEY_ID=key"))
	is.True(strings.Contains(env, "AWS_SECRET_ACCESS_KEY=secret"))
	is.True(!strings.Contains(env, "AWS_CA_BUNDLE"))
	is.True(!strings.Contains(env, "SOMETHING_ELSE"))
}

// TestServeReplicaNeedsLitestream: -replica without a usable Litestream,
// or with a URL it cannot use, is a start-up error, saying how to get a
// Litestream, and checked before anything is bound or created: nothing is
// served and no data folder is left behind.
func TestServeReplicaNeedsLitestream(t *testing.T) {
	notLitestream := filepath.Join(t.TempDir(), "litestream")
	if err := os.WriteFile(notLitestream, []byte("#!/bin/sh\necho v0.3.13\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, replica, bin, says string
	}{
		{"Missing", "file:///tmp/replica", filepath.Join(t.TempDir(), "nothing"), litestreamInstall},
		{"WrongVersion", "file:///tmp/replica", notLitestream, litestreamInstall},
		{"NoVersion", "file:///tmp/replica", "/bin/true", litestreamInstall},
		{"BadURL", "ftp://x/y", notLitestream, "s3://"},
		{"UnknownScheme", "gs://bucket/path", notLitestream, "s3://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			data := filepath.Join(t.TempDir(), "data")
			var out, errOut bytes.Buffer
			err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-data", data,
				"-replica", tc.replica, "-litestream", tc.bin}, &out, &errOut)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tc.says))
			is.True(!strings.Contains(errOut.String(), "serving"))
			_, err = os.Stat(data)
			is.True(os.IsNotExist(err)) // checked before the store was opened
		})
	}
}

// fakeLitestream writes a stand-in for the Litestream binary: `version`
// prints the pinned release, any other command runs the shell script body
// (the command line in "$@").
func fakeLitestream(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "litestream")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo " + litestreamPin + "; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// trappingLitestream is fakeLitestream running until stopped, with trap as
// its SIGTERM handler, and a function that waits until the handler is set
// in the instance last started: a signal that comes before ends the shell
// as if it had no trap.
func trappingLitestream(t *testing.T, trap string) (bin string, trapped func()) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "trapped")
	bin = fakeLitestream(t, "trap '"+trap+"' TERM\n: > '"+ready+"'\nwhile :; do sleep 0.1; done")
	return bin, func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if os.Remove(ready) == nil { // consumed: the next start writes it again
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the fake litestream did not set its SIGTERM handler")
			}
		}
	}
}

// TestStoppedLitestreamCheckBlamesNoBinary: a command stopped while it
// checks the Litestream binary reports the stop, not a binary that "is not
// a usable litestream" (SIGINT in the first instants of project restore
// said so).
func TestStoppedLitestreamCheckBlamesNoBinary(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := findLitestream(ctx, fakeLitestream(t, "exit 0"))
	is.True(errors.Is(err, context.Canceled))
	is.True(!strings.Contains(err.Error(), "not a usable")) // err
}

// TestReplicatorStopReportsAFailedFinalSync: a final sync that Litestream
// never confirms is Stop's error, even when Litestream then exits cleanly,
// so that serve does not exit 0 with a replica that lacks the last commits.
func TestReplicatorStopReportsAFailedFinalSync(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	cliIn(t, dir)("project", "create", "acme")
	// Replicates nothing, has no control socket, and exits 0 on SIGTERM.
	bin, trapped := trappingLitestream(t, "exit 0")
	u, err := parseReplicaURL("file://" + t.TempDir())
	is.NoErr(err)
	rep, err := startReplicator(dir, u, bin, litestreamPin, slog.New(slog.DiscardHandler), io.Discard)
	is.NoErr(err)
	trapped()
	err = rep.Stop(time.Now().Add(500 * time.Millisecond))
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "final sync")) // err
}

// TestServeFailsWhenLitestreamStopsBadly: serve -replica whose Litestream
// does not stop cleanly exits 1 on SIGTERM, saying the replica may lack the
// last commits, not 0 after a log line.
func TestServeFailsWhenLitestreamStopsBadly(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir() // no project: the final sync has nothing to wait for
	bin, trapped := trappingLitestream(t, "exit 3")
	addr := freeAddr(t)
	cmd := serverCmd("serve", "-addr", addr, "-data", dir, "-replica", "file://"+t.TempDir(), "-litestream", bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	waitUp(t, addr)
	trapped()
	is.NoErr(cmd.Process.Signal(syscall.SIGTERM))
	waitExit(t, cmd, "the server did not stop")
	is.Equal(cmd.ProcessState.ExitCode(), 1)
	is.True(strings.Contains(stderr.String(), "server: stopped by SIGTERM: -replica: the replica may lack the last commits: litestream exited: exit status 3")) // stderr
}

// TestOneReplicatingServerPerDataFolder: a second serve -replica on a data
// folder is refused at start-up and leaves the first one's configuration
// alone; a plain serve on the folder is still allowed, and once the first
// server has stopped another serve -replica starts.
func TestOneReplicatingServerPerDataFolder(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	bin, trapped := trappingLitestream(t, "exit 0") // replicate: runs until stopped, exits as Litestream does
	replica := func() string { return "file://" + t.TempDir() }
	first, firstReplica := freeAddr(t), replica()
	cmd, _ := startServer(t, "serve", "-addr", first, "-data", dir, "-replica", firstReplica, "-litestream", bin)
	waitUp(t, first)
	config := filepath.Join(dir, ".litestream", "litestream.yml")
	before, err := os.ReadFile(config)
	is.NoErr(err)

	out, errOut, status := runServerCmd(t, "serve", "-addr", freeAddr(t), "-data", dir, "-replica", replica(), "-litestream", bin)
	is.Equal(status, 1)
	is.Equal(out, "")
	is.Equal(errOut, "server: -replica: another server already replicates data folder "+dir+
		" (it holds "+filepath.Join(dir, ".litestream", "serve.lock")+"); stop it first, or serve another folder\n")
	after, err := os.ReadFile(config)
	is.NoErr(err)
	is.Equal(string(after), string(before)) // still the first server's

	plain := freeAddr(t)
	startServer(t, "serve", "-addr", plain, "-data", dir)
	waitUp(t, plain)

	trapped()
	is.NoErr(cmd.Process.Signal(syscall.SIGTERM))
	is.NoErr(cmd.Wait())
	next := freeAddr(t)
	startServer(t, "serve", "-addr", next, "-data", dir, "-replica", firstReplica, "-litestream", bin)
	waitUp(t, next)
}

// TestRestoreChecksBeforeDownloading: project restore from a replica
// refuses a missing data folder, an invalid slug and a taken one before it
// runs `litestream restore`.
func TestRestoreChecksBeforeDownloading(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	is.New(t).NoErr(run(ctx, []string{"project", "create", "-data", data, "acme"}, io.Discard, io.Discard))
	file := filepath.Join(t.TempDir(), "file")
	is.New(t).NoErr(os.WriteFile(file, nil, 0o644))
	is.New(t).NoErr(os.Mkdir(filepath.Join(data, "stray"), 0o755)) // in the way, though no project
	for _, tc := range []struct {
		name, data, slug, says string
	}{
		{"NoDataFolder", filepath.Join(data, "nope"), "beta", "does not exist"},
		{"DataIsAFile", file, "beta", "is not a folder"},
		{"InvalidSlug", data, "Beta", "project slug \"Beta\" must be"},
		{"Exists", data, "acme", "project \"acme\" already exists"},
		{"FolderInTheWay", data, "stray", "project \"stray\" already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			downloaded := filepath.Join(t.TempDir(), "downloaded")
			bin := fakeLitestream(t, ": > "+downloaded+"\nexit 1")
			err := run(ctx, []string{"project", "restore", "-data", tc.data, "-litestream", bin,
				"-from", "file:///replica/" + tc.slug + "/project.db", tc.slug}, io.Discard, io.Discard)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tc.says))
			_, err = os.Stat(downloaded)
			is.True(os.IsNotExist(err)) // litestream restore never ran
		})
	}
}

// TestRestoreAtOutsideTheReplica: an -at that the replica does not cover
// is said to be before its first state or after its last, with the range
// that `litestream ltx` lists; Litestream's own words were "timestamp does
// not exist".
func TestRestoreAtOutsideTheReplica(t *testing.T) {
	bin := fakeLitestream(t, `case "$1" in
restore) echo "Error: timestamp does not exist" >&2; exit 1 ;;
ltx) echo '[{"level":0,"timestamp":"2026-11-21T15:00:00Z"},{"level":9,"timestamp":"2026-11-21T14:00:00Z"},{"level":0,"timestamp":"2026-11-21T14:30:00Z"}]' ;;
esac`)
	for _, tc := range []struct{ at, says string }{
		{"2026-11-21T13:59:59Z", "-at 2026-11-21T13:59:59Z is before the first state of the replica"},
		{"2026-11-21T15:00:01Z", "-at 2026-11-21T15:00:01Z is after the last state of the replica"},
		{"2026-11-21T14:15:00Z", "-at 2026-11-21T14:15:00Z is outside the states of the replica"}, // within its range
	} {
		t.Run(tc.at, func(t *testing.T) {
			is := is.New(t)
			err := run(context.Background(), []string{"project", "restore", "-data", t.TempDir(), "-litestream", bin,
				"-from", "file:///replica/acme/project.db", "-at", tc.at, "acme"}, io.Discard, io.Discard)
			is.True(err != nil)
			is.True(strings.HasPrefix(err.Error(), tc.says))
			is.True(strings.HasSuffix(err.Error(), "which holds states from 2026-11-21T14:00:00Z to 2026-11-21T15:00:00Z (to the second)"))
		})
	}
}

// TestInterruptedRestoreStopsCleanly: SIGINT while `litestream restore`
// downloads ends the command through its context: the download's
// temporary folder is removed, nothing is left in the data folder, and the
// command exits 1 with one line.
func TestInterruptedRestoreStopsCleanly(t *testing.T) {
	is := is.New(t)
	tmp, data := t.TempDir(), t.TempDir()
	started := filepath.Join(t.TempDir(), "started")
	bin := fakeLitestream(t, ": > "+started+"\nexec sleep 3600") // restore: a download that takes its time
	cmd := serverCmd("project", "restore", "-data", data, "-from", "file:///replica/acme/project.db", "-litestream", bin, "acme")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if i == 6000 {
			t.Fatal("litestream restore was not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	is.NoErr(cmd.Process.Signal(os.Interrupt))
	waitExit(t, cmd, "the interrupted restore did not end")
	is.Equal(cmd.ProcessState.ExitCode(), 1) // exited, not killed by the signal
	is.Equal(stderr.String(), "server: stopped by SIGINT\n")
	for _, dir := range []string{tmp, data} {
		left, err := os.ReadDir(dir)
		is.NoErr(err)
		is.Equal(len(left), 0) // no download, no staging folder left
	}
}

// TestProjectRestoreFromSnapshot restores a project export with the
// command line; a token of the source works on it.
func TestProjectRestoreFromSnapshot(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	src, err := projectdata.Open(t.TempDir(), nil)
	is.NoErr(err)
	defer src.Close()
	_, tok, err := src.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	e, err := src.CreateProjectExport(ctx, "acme")
	is.NoErr(err)
	_, f, err := src.OpenExport(ctx, "acme", e.ID)
	is.NoErr(err)
	f.Close()

	dir := t.TempDir()
	var out, errOut bytes.Buffer
	is.NoErr(run(ctx, []string{"project", "restore", "-data", dir, "-from", f.Name(), "moved"}, &out, &errOut))
	is.Equal(out.Len(), 0) // nothing on stdout
	is.True(strings.Contains(errOut.String(), "restored project moved"))

	err = run(ctx, []string{"project", "restore", "-data", dir, "-from", f.Name(), "moved"}, &out, &errOut)
	is.True(err != nil) // exists
	err = run(ctx, []string{"project", "restore", "-data", dir, "-from", f.Name(), "-at", "2026-11-21T14:05:09Z", "other"}, &out, &errOut)
	is.True(err != nil) // -at needs a replica
	err = run(ctx, []string{"project", "restore", "-data", dir, "other"}, &out, &errOut)
	is.True(err != nil) // -from is required

	store, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer store.Close()
	_, err = store.Authenticate(ctx, "moved", tok.Token)
	is.NoErr(err)
}

// TestProjectSyncNeedsAReplicatingServer: project sync of a folder that no
// server replicates says so; a missing or invalid slug and a data folder
// that is a file are refused as by the other commands.
func TestProjectSyncNeedsAReplicatingServer(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	is.NoErr(run(ctx, []string{"project", "create", "-data", dir, "acme"}, &out, &errOut))
	err := run(ctx, []string{"project", "sync", "-data", dir, "acme"}, &out, &errOut)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "no Litestream replicates"))
	err = run(ctx, []string{"project", "sync", "-data", dir, "nope"}, &out, &errOut)
	is.True(errors.Is(err, projectdata.ErrProjectNotFound))
	err = run(ctx, []string{"project", "sync", "-data", dir, "Acme"}, &out, &errOut)
	is.True(errors.Is(err, projectdata.ErrInvalidProjectSlug))
	file := filepath.Join(dir, "acme", "project.db")
	err = run(ctx, []string{"project", "sync", "-data", file, "acme"}, &out, &errOut)
	is.Equal(err.Error(), "data folder "+file+" is not a folder")
}

// TestProjectSyncTimeout: the replica not confirmed in time is said so,
// with Litestream's last answer.
func TestProjectSyncTimeout(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	is.NoErr(run(ctx, []string{"project", "create", "-data", dir, "acme"}, io.Discard, io.Discard))
	is.NoErr(os.MkdirAll(filepath.Join(dir, ".litestream"), 0o700))
	ln, err := net.Listen("unix", controlSocket(dir))
	is.NoErr(err)
	notYet := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database not open yet", http.StatusConflict)
	})}
	go notYet.Serve(ln)
	defer notYet.Close()
	err = run(ctx, []string{"project", "sync", "-data", dir, "-timeout", "300ms", "acme"}, io.Discard, io.Discard)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(strings.HasPrefix(err.Error(), "project acme: its replica was not confirmed within -timeout 300ms: "))
	is.True(strings.HasSuffix(err.Error(), "(Litestream answered 409: database not open yet)"))
}
