package main

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/internal/pdtest"
)

// stopSlack is how far past its -stop-timeout a stop may end in these
// tests: closing the store, the process's exit, a busy machine. A hang
// guard on a configured bound, not a measure of speed.
const stopSlack = 5 * time.Second

// TestStopSplitsItsBudget: the drain gets all of -stop-timeout without a
// replica, and with one what is left once the final sync is reserved
// finalSyncReserve (60% of a shorter -stop-timeout); an
// explicit -drain is taken as given.
func TestStopSplitsItsBudget(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		drain time.Duration
	}{
		{nil, 25 * time.Second},
		{[]string{"-replica", "file:///r"}, 10 * time.Second},
		{[]string{"-stop-timeout", "1m", "-replica", "file:///r"}, 45 * time.Second},
		{[]string{"-stop-timeout", "10s", "-replica", "file:///r"}, 4 * time.Second},
		{[]string{"-stop-timeout", "10s"}, 10 * time.Second},
		{[]string{"-stop-timeout", "10s", "-drain", "9s", "-replica", "file:///r"}, 9 * time.Second},
		{[]string{"-drain", "3s"}, 3 * time.Second},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			is := is.New(t)
			var cfg serveConfig
			fs := cfg.flags("serve")
			is.NoErr(fs.Parse(tc.args))
			is.NoErr(cfg.checkStop(fs))
			is.Equal(cfg.drain, tc.drain)
		})
	}
}

// holdRequest sends the headers of a query to the server at addr and
// only the start of its body, so that the request runs (its handler
// reads the body) until the server closes the connection, which it
// returns.
func holdRequest(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /projects/acme/query HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", addr, token)
	time.Sleep(200 * time.Millisecond) // read by the server: the request runs
	return c
}

// stopTimed sends SIGTERM to the server and returns how long it took to
// exit, failing the test past the bound and the slack.
func stopTimed(t *testing.T, cmd *exec.Cmd, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, "the server did not stop")
	took := time.Since(start)
	if took > bound+stopSlack {
		t.Errorf("the stop took %v, past its bound %v and %v of slack", took, bound, stopSlack)
	}
	return took
}

// TestStopCutsOffASlowRequestAtTheDrain: a request still running when
// -drain ends is cut off, the server exits 1 saying so, within
// -stop-timeout, and it logs how long each phase took.
func TestStopCutsOffASlowRequestAtTheDrain(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	token := strings.TrimSpace(cliIn(t, dir)("project", "create", "acme"))
	addr := freeAddr(t)
	cmd := serverCmd("serve", "-addr", addr, "-data", dir, "-stop-timeout", "3s", "-drain", "1s")
	var stderr pdtest.LockedBuffer
	cmd.Stderr = &stderr
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	waitUp(t, addr)
	holdRequest(t, addr, token)
	took := stopTimed(t, cmd, 3*time.Second)
	t.Logf("stopped in %v", took)
	is.Equal(cmd.ProcessState.ExitCode(), 1)
	logs := stderr.String()
	is.True(strings.Contains(logs, "server: stopped by SIGTERM: requests still running after the 1s drain were cut off")) // logs
	for _, phase := range []string{`msg="shutting down: drained" took=`, `msg="shutting down: store closed" took=`, `msg=stopped took=`} {
		is.True(strings.Contains(logs, phase)) // each phase says how long it took
	}
}

// TestStopWithAReplicaFitsTheStopTimeout: with a Litestream that never
// confirms the final sync and ignores SIGTERM, and a request that never
// ends, serve -replica still stops within -stop-timeout: the drain gets
// its default share (40% of a 4 s stop), the final sync is cut short,
// Litestream is killed, and the server exits 1. Without the request, the
// final sync cut short is the server's error; with it, the server's error
// names both.
func TestStopWithAReplicaFitsTheStopTimeout(t *testing.T) {
	bin, trapped := trappingLitestream(t, "") // no control socket: no sync ever confirmed
	for _, tc := range []struct {
		name string
		slow bool
		says string
	}{
		{"SlowRequest", true, "server: stopped by SIGTERM: requests still running after the 1.6s drain were cut off; -replica: the replica may lack the last commits: final sync cut short after"},
		{"NoRequest", false, "server: stopped by SIGTERM: -replica: the replica may lack the last commits: final sync cut short after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			token := strings.TrimSpace(cliIn(t, dir)("project", "create", "acme")) // a database to sync
			addr := freeAddr(t)
			cmd := serverCmd("serve", "-addr", addr, "-data", dir, "-stop-timeout", "4s",
				"-replica", "file://"+t.TempDir(), "-litestream", bin)
			var stderr pdtest.LockedBuffer
			cmd.Stderr = &stderr
			is.NoErr(cmd.Start())
			defer cmd.Process.Kill()
			waitUp(t, addr)
			trapped()
			if tc.slow {
				holdRequest(t, addr, token)
			}
			took := stopTimed(t, cmd, 4*time.Second)
			t.Logf("stopped in %v", took)
			is.Equal(cmd.ProcessState.ExitCode(), 1)
			logs := stderr.String()
			is.True(strings.Contains(logs, tc.says))                                           // the error
			is.True(strings.Contains(logs, "final sync cut short"))                            // logged
			is.True(strings.Contains(logs, `msg="stopping litestream: killed, still running`)) // ignored SIGTERM
			is.True(strings.Contains(logs, `msg="stopping litestream: final sync failed" took=`))
		})
	}
}
