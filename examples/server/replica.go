package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Litestream is the replication engine `serve -replica` runs: the pinned
// release, built with
//
//	go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.16
//
// The generated configuration uses v0.5's directory watch, so any v0.5
// release is accepted; the pin is what CI and the integration tests run.
const (
	litestreamPin       = "v0.5.16"
	litestreamSeries    = "v0.5."
	litestreamInstall   = "go install github.com/benbjohnson/litestream/cmd/litestream@" + litestreamPin
	litestreamStateName = ".litestream" // in the data folder: config and replication state
)

// Supervision of the Litestream child.
const (
	replicaSyncInterval = time.Second      // Litestream's sync interval: the RPO is about this plus its 1 s WAL poll
	restartBackoffMin   = time.Second      // first wait before restarting a child that died
	restartBackoffMax   = 30 * time.Second // longest wait between restarts
	restartHealthyAfter = time.Minute      // a child that ran this long restarts without delay growth
	// litestreamExitGrace is the part of Stop's time kept for Litestream's
	// exit after the final sync (a fifth of the time, when shorter).
	litestreamExitGrace = 2 * time.Second
)

// childEnvNames are the only environment variables the Litestream child
// inherits: its credentials and what a process needs to run. Anything
// else stays out; AWS_CA_BUNDLE, for one, breaks its S3 client.
var childEnvNames = []string{
	"PATH", "HOME", "TMPDIR", "TZ",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"LITESTREAM_ACCESS_KEY_ID", "LITESTREAM_SECRET_ACCESS_KEY",
}

// childEnv is the clean environment of a Litestream child.
func childEnv() []string {
	var env []string
	for _, name := range childEnvNames {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// parseReplicaURL checks a replica URL: s3://bucket[/path][?endpoint=…&
// region=…&force-path-style=…] or file:///absolute/path. Its errors quote
// the URL as redactReplicaURL does: never with a password.
func parseReplicaURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		reason := "not a valid URL"
		var ue *url.Error
		if errors.As(err, &ue) && !strings.Contains(raw, "@") { // else the parser's words may quote part of a password
			reason += ": " + ue.Err.Error()
		}
		return nil, fmt.Errorf("replica URL %q: %s", redactReplicaURL(raw), reason)
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("replica URL %q: s3:// needs a bucket (s3://BUCKET/PATH)", u.Redacted())
		}
	case "file":
		if u.Host != "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("replica URL %q: file:// needs an absolute path (file:///PATH)", u.Redacted())
		}
	default:
		return nil, fmt.Errorf("replica URL %q: want s3://BUCKET/PATH?endpoint=… or file:///PATH", u.Redacted())
	}
	return u, nil
}

// redactReplicaURL is the URL raw as a message may quote it: with the
// password of its user information replaced (url.URL.Redacted), or, when
// raw does not even parse, with everything between its scheme and its last
// "@" replaced.
func redactReplicaURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return raw[:start] + "xxxxx" + raw[at:]
}

// findLitestream returns the path of a usable Litestream binary (bin, or
// "litestream" on PATH when bin is empty) and its version, or an error
// that says how to get one.
func findLitestream(ctx context.Context, bin string) (string, string, error) {
	if bin == "" {
		bin = "litestream"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", "", fmt.Errorf("no usable litestream binary (%v); install it with `%s` or pass -litestream PATH", err, litestreamInstall)
	}
	check, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(check, path, "version")
	cmd.Env = childEnv()
	out, err := cmd.Output()
	if ctx.Err() != nil {
		// Stopped (SIGINT, SIGTERM) while the binary was checked: no
		// fault of the binary's.
		return "", "", ctx.Err()
	}
	version := strings.TrimSpace(string(out))
	if err == nil && !strings.HasPrefix(version, litestreamSeries) {
		err = fmt.Errorf("`%s version` printed %q", path, version)
	}
	if err != nil {
		return "", "", fmt.Errorf("%s is not a usable litestream %s* binary (%v); install it with `%s`", path, litestreamSeries, err, litestreamInstall)
	}
	return path, version, nil
}

// litestreamConfig is the configuration of `litestream replicate`: one
// directory entry that watches the data folder, recursively, for project
// databases, and replicates each to REPLICA/<slug>/project.db. Its JSON is
// valid YAML, and JSON quoting keeps paths and URLs intact.
type litestreamConfig struct {
	Logging struct {
		Level  string `json:"level"`
		Stderr bool   `json:"stderr"`
	} `json:"logging"`
	// Socket is Litestream's control socket, through which the server
	// asks for the final sync.
	Socket struct {
		Enabled     bool   `json:"enabled"`
		Path        string `json:"path"`
		Permissions uint32 `json:"permissions"`
	} `json:"socket"`
	DBs []litestreamDir `json:"dbs"`
}

type litestreamDir struct {
	Dir       string            `json:"dir"`
	Pattern   string            `json:"pattern"`
	Recursive bool              `json:"recursive"`
	Watch     bool              `json:"watch"`
	MetaDir   string            `json:"meta-dir"`
	Replica   litestreamReplica `json:"replica"`
}

type litestreamReplica struct {
	URL          string `json:"url"`
	SyncInterval string `json:"sync-interval"`
}

// maxSocketPath is the longest path a Unix socket may have (sun_path).
const maxSocketPath = 100

// controlSocket is the path of the control socket of the Litestream that
// replicates the data folder dir (absolute): in its state folder, or in
// the temporary folder when that path is too long for a socket.
func controlSocket(dir string) string {
	socket := filepath.Join(dir, litestreamStateName, "control.sock")
	if len(socket) > maxSocketPath {
		sum := sha256.Sum256([]byte(dir))
		socket = filepath.Join(os.TempDir(), "projectdata-litestream-"+hex.EncodeToString(sum[:8])+".sock")
	}
	return socket
}

// controlClient is an HTTP client of Litestream's control socket.
func controlClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// writeLitestreamConfig writes the configuration for the data folder dir
// (absolute) and the replica URL into dir/.litestream/, and returns its
// path and the control socket's. The file may hold credentials in the URL:
// it is private.
func writeLitestreamConfig(dir string, replica *url.URL) (config, socket string, err error) {
	state := filepath.Join(dir, litestreamStateName)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", "", fmt.Errorf("create litestream state folder: %w", err)
	}
	socket = controlSocket(dir)
	var cfg litestreamConfig
	cfg.Logging.Level, cfg.Logging.Stderr = "info", true
	cfg.Socket.Enabled, cfg.Socket.Path, cfg.Socket.Permissions = true, socket, 0o600
	cfg.DBs = []litestreamDir{{
		Dir: dir, Pattern: "project.db", Recursive: true, Watch: true,
		MetaDir: filepath.Join(state, "meta"),
		Replica: litestreamReplica{URL: replica.String(), SyncInterval: replicaSyncInterval.String()},
	}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", "", err
	}
	config = filepath.Join(state, "litestream.yml")
	if err := os.WriteFile(config, append(b, '\n'), 0o600); err != nil {
		return "", "", fmt.Errorf("write litestream config: %w", err)
	}
	return config, socket, nil
}

// replicator runs `litestream replicate` as a supervised child: restarted
// with a growing delay when it dies, stopped (with its final sync) by Stop.
type replicator struct {
	bin, config, socket, dataDir string
	log                          *slog.Logger
	out                          io.Writer // the child's own log lines
	lock                         *os.File  // see lockReplication; nil where there is none

	mu      sync.Mutex
	cmd     *exec.Cmd // the running child, if any
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

// startReplicator takes the data folder's replication lock (refused while
// another server replicates it), writes the configuration that replicates
// the folder to the replica u and starts the child, the Litestream binary
// at path (checked by findLitestream). The child's output goes to out.
// Stop releases the lock.
func startReplicator(dataDir string, u *url.URL, path, version string, logger *slog.Logger, out io.Writer) (_ *replicator, err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	lock, err := lockReplication(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && lock != nil {
			lock.Close()
		}
	}()
	config, socket, err := writeLitestreamConfig(dir, u)
	if err != nil {
		return nil, err
	}
	r := &replicator{bin: path, config: config, socket: socket, dataDir: dir, log: logger, out: out, lock: lock, stop: make(chan struct{}), done: make(chan struct{})}
	if err := r.startChild(); err != nil {
		return nil, fmt.Errorf("start litestream: %w", err)
	}
	logger.Info("replicating", "litestream", path, "version", version, "replica", u.Redacted(), "config", config)
	go r.supervise()
	return r, nil
}

// startChild starts one `litestream replicate` child.
func (r *replicator) startChild() error {
	cmd := exec.Command(r.bin, "replicate", "-no-expand-env", "-config", r.config)
	// Run in the state folder: in the folder that holds the data folder
	// (./data, as the README runs it), Litestream's watcher took the
	// projects created after its first one by paths relative to its
	// working folder, which it refuses, and replicated none of them.
	cmd.Dir = filepath.Dir(r.config)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = r.out, r.out
	cmd.SysProcAttr = childProcAttr()
	if r.lock != nil {
		// The child holds the lock too: a Litestream that outlives a
		// killed server (still in its final sync) keeps the next server
		// from starting a second one on the same databases.
		cmd.ExtraFiles = []*os.File{r.lock}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	r.log.Info("litestream started", "pid", cmd.Process.Pid)
	return nil
}

// supervise waits for the child and restarts it when it dies, waiting
// restartBackoffMin, doubling up to restartBackoffMax while it keeps dying
// young, until Stop.
func (r *replicator) supervise() {
	defer close(r.done)
	backoff := restartBackoffMin
	for {
		r.mu.Lock()
		cmd := r.cmd
		r.mu.Unlock()
		started := time.Now()
		err := cmd.Wait()
		select {
		case <-r.stop:
			return
		default:
		}
		if time.Since(started) >= restartHealthyAfter {
			backoff = restartBackoffMin
		}
		r.log.Error("litestream exited; restarting", "pid", cmd.Process.Pid, "err", err, "after", backoff)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, restartBackoffMax)
			r.mu.Lock()
			if r.stopped {
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
			if err := r.startChild(); err != nil {
				r.log.Error("restart litestream", "err", err, "after", backoff)
				continue
			}
			break
		}
	}
}

// Stop stops the child with SIGTERM, so that Litestream syncs what it has
// not yet replicated, waits for it (killing it at deadline) and releases
// the data folder's replication lock. The final sync gets the time until
// deadline less a short grace for the exit (litestreamExitGrace). Call it
// once no write can come any more, and before the Store closes: closing
// the last connection to a database checkpoints its WAL away, and
// Litestream's final sync reads the WAL. It returns an error when the
// final sync did not confirm every database on the replica before its
// time ran out, or Litestream did not exit cleanly by deadline: the
// replica may then lack the last commits.
func (r *replicator) Stop(deadline time.Time) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	close(r.stop)
	cmd := r.cmd
	r.mu.Unlock()
	if r.lock != nil {
		defer r.lock.Close() // once the child has exited
	}
	left := time.Until(deadline)
	r.log.Info("stopping litestream: final sync", "pid", cmd.Process.Pid, "within", left.Round(time.Millisecond))
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-max(min(litestreamExitGrace, left/5), 0)))
	defer cancel()
	synced := r.flush(ctx)
	switch {
	case errors.Is(synced, context.DeadlineExceeded):
		synced = fmt.Errorf("final sync cut short after %v (-stop-timeout): %w", time.Since(start).Round(time.Millisecond), synced)
	case synced != nil:
		synced = fmt.Errorf("final sync: %w", synced)
	}
	if synced != nil {
		r.log.Warn("stopping litestream: final sync failed", "took", time.Since(start), "err", synced)
	} else {
		r.log.Info("stopping litestream: final sync done", "took", time.Since(start))
	}
	start = time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
		cmd.Process.Kill()
		<-r.done
		r.log.Warn("stopping litestream: killed, still running at the end of the stop", "took", time.Since(start))
		return errors.Join(synced, errors.New("litestream did not exit within -stop-timeout; killed"))
	}
	r.log.Info("stopping litestream: exited", "took", time.Since(start))
	if st := cmd.ProcessState; st != nil && !st.Success() {
		return errors.Join(synced, fmt.Errorf("litestream exited: %v", st))
	}
	return synced
}

// flush asks the running Litestream, through its control socket, to sync
// every project database of the data folder to the replica, and waits
// until each is replicated. Litestream's own shutdown does not sync a
// database it has not opened yet (it opens them on its first WAL poll),
// so a database it does not know or has not opened is asked again until
// ctx ends.
func (r *replicator) flush(ctx context.Context) error {
	dbs, err := filepath.Glob(filepath.Join(r.dataDir, "*", "project.db"))
	if err != nil {
		return err
	}
	client := controlClient(r.socket)
	var first error
	for _, db := range dbs {
		if strings.HasPrefix(filepath.Base(filepath.Dir(db)), ".") {
			continue // a project being created or restored
		}
		if err := syncDB(ctx, client, db); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncDB asks Litestream to sync one database and waits for the replica.
func syncDB(ctx context.Context, client *http.Client, db string) error {
	body, err := json.Marshal(map[string]any{"path": db, "wait": true, "timeout": 30})
	if err != nil {
		return err
	}
	last := "no answer from Litestream" // for the error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://litestream/sync", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		switch {
		case err == nil:
			msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("Litestream answered %d: %s", res.StatusCode, bytes.TrimSpace(msg))
		case ctx.Err() == nil:
			last = err.Error()
		}
		// Not yet open (409) or registered (404), or the socket not yet
		// listening: ask again shortly.
		select {
		case <-ctx.Done():
			return fmt.Errorf("sync %s: %w (%s)", db, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restoreFromReplica runs `litestream restore` of the database replica at
// u (at time at, when not zero) into the new file out.
func restoreFromReplica(ctx context.Context, bin string, u *url.URL, at time.Time, out string) error {
	path, _, err := findLitestream(ctx, bin)
	if err != nil {
		return err
	}
	args := []string{"restore", "-o", out}
	if !at.IsZero() {
		args = append(args, "-timestamp", at.UTC().Format(time.RFC3339Nano))
	}
	args = append(args, u.String())
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the child was killed for it
		}
		// Litestream's words for a time outside the replica's; its exit
		// status is 1 for any failure.
		if !at.IsZero() && strings.Contains(stderr.String(), "timestamp does not exist") {
			return outsideReplica(ctx, path, u, at)
		}
		var hint string
		if strings.Contains(stderr.String(), "no matching backup files") {
			// Litestream's words for a URL that names no database's
			// replica, such as the -replica URL itself.
			hint = "; a project's replica is at the -replica URL followed by /SLUG/project.db"
		}
		return fmt.Errorf("litestream restore from %s: %v: %s%s", u.Redacted(), err, strings.TrimSpace(stderr.String()), hint)
	}
	return nil
}

// outsideReplica is the error for a time at that the replica at u does not
// cover: before its first state or after its last, with the range its
// files' times give (`litestream ltx`, a listing: nothing is downloaded).
func outsideReplica(ctx context.Context, bin string, u *url.URL, at time.Time) error {
	when := at.UTC().Format(time.RFC3339Nano)
	cmd := exec.CommandContext(ctx, bin, "ltx", "-level", "all", "-json", u.String())
	cmd.Env = childEnv()
	out, err := cmd.Output()
	var files []struct {
		Timestamp time.Time `json:"timestamp"`
	}
	if err != nil || json.Unmarshal(out, &files) != nil || len(files) == 0 {
		return fmt.Errorf("-at %s is before the first state of the replica %s or after its last", when, u.Redacted())
	}
	first, last := files[0].Timestamp, files[0].Timestamp
	for _, f := range files[1:] {
		if f.Timestamp.Before(first) {
			first = f.Timestamp
		}
		if f.Timestamp.After(last) {
			last = f.Timestamp
		}
	}
	// Litestream lists the times to the second: compare accordingly.
	where := "outside the states"
	switch {
	case at.Before(first):
		where = "before the first state"
	case !at.Before(last.Add(time.Second)):
		where = "after the last state"
	}
	return fmt.Errorf("-at %s is %s of the replica %s, which holds states from %s to %s (to the second)",
		when, where, u.Redacted(), first.Format(time.RFC3339), last.Format(time.RFC3339))
}
