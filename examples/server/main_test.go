package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var tokenLine = regexp.MustCompile(`^pat_[a-z2-7]{52}\n$`)

func TestProjectCreatePrintsOnlyTheToken(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	is.NoErr(run(context.Background(), []string{"project", "create", "-data", dir, "-name", "Acme", "acme"}, &out, &errOut))
	is.True(tokenLine.MatchString(out.String()))

	out.Reset()
	is.NoErr(run(context.Background(), []string{"token", "create", "-data", dir, "-role", "read", "-name", "ci", "acme"}, &out, &errOut))
	is.True(tokenLine.MatchString(out.String()))

	store, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer store.Close()
	c, err := store.Authenticate(context.Background(), "acme", strings.TrimSpace(out.String()))
	is.NoErr(err)
	is.Equal(c.Role, projectdata.RoleRead)

	out.Reset() // flags after the slug work too
	is.NoErr(run(context.Background(), []string{"project", "create", "beta", "-data", dir, "-name", "Beta"}, &out, &errOut))
	is.True(tokenLine.MatchString(out.String()))
	is.NoErr(store.Close())
	store, err = projectdata.Open(dir, nil)
	is.NoErr(err)
	defer store.Close()
	p, _, err := store.GetProject(context.Background(), "beta")
	is.NoErr(err)
	is.Equal(p.Name, "Beta")

	out.Reset()
	err = run(context.Background(), []string{"project", "create", "-data", dir, "acme"}, &out, &errOut)
	is.True(err != nil) // exists
	is.Equal(out.Len(), 0)
	err = run(context.Background(), []string{"token", "create", "-data", dir, "-role", "root", "acme"}, &out, &errOut)
	is.True(err != nil)
	is.True(run(context.Background(), []string{"bogus"}, &out, &errOut) != nil)
}

func TestBootstrapCreatesDemoOnce(t *testing.T) {
	is := is.New(t)
	store, err := projectdata.Open(t.TempDir(), nil)
	is.NoErr(err)
	defer store.Close()
	var out bytes.Buffer
	is.NoErr(bootstrapDemo(context.Background(), store, &out))
	is.True(strings.Contains(out.String(), "pat_"))
	out.Reset()
	is.NoErr(bootstrapDemo(context.Background(), store, &out))
	is.Equal(out.Len(), 0)

	// A folder whose one project cannot be read gets no demo, and serves.
	dir := t.TempDir()
	is.NoErr(os.MkdirAll(filepath.Join(dir, "bad"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "bad", "project.db"), []byte("not a database, but long enough to be read as one"), 0o644))
	damaged, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer damaged.Close()
	is.NoErr(bootstrapDemo(context.Background(), damaged, &out))
	is.Equal(out.Len(), 0)
	_, err = os.Stat(filepath.Join(dir, "demo"))
	is.True(os.IsNotExist(err))
}

func TestShutdownDrainsRequestsInFlight(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	started := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- runServer(ctx, ln, slow, slog.New(slog.NewTextHandler(io.Discard, nil)), defaultLimits)
	}()

	got := make(chan string, 1)
	go func() {
		res, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- string(b)
	}()
	<-started
	cancel() // as SIGINT would
	is.Equal(<-got, "done")
	is.NoErr(<-served)
	_, err = net.Dial("tcp", ln.Addr().String())
	is.True(err != nil) // no longer accepting
}

// TestShutdownCutsOffRequestsPastTheDrain: a request still running when
// the drain ends has its connection closed (its context ends, so the store
// closed next does not wait for it), and runServer says what happened
// rather than "context deadline exceeded".
func TestShutdownCutsOffRequestsPastTheDrain(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	started, ended := make(chan struct{}), make(chan struct{})
	stuck := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-time.After(time.Minute):
		}
	})
	lim := defaultLimits
	lim.drain = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- runServer(ctx, ln, stuck, slog.New(slog.DiscardHandler), lim) }()
	go http.Get("http://" + ln.Addr().String() + "/")
	<-started
	cancel() // as SIGTERM would
	err = <-served
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "still running after the 100ms drain")) // err
	select {
	case <-ended:
	case <-time.After(10 * time.Second): // a hang guard, not a measure
		t.Fatal("the request past the drain still runs")
	}
}

func TestShutdownDelayServesWithHealthzUnavailable(t *testing.T) {
	is := is.New(t)
	store, err := projectdata.Open(t.TempDir(), nil)
	is.NoErr(err)
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	url := "http://" + ln.Addr().String() + "/healthz"
	lim := defaultLimits
	lim.shutdownDelay = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- runServer(ctx, ln, httpapi.New(store, nil), slog.New(slog.DiscardHandler), lim)
	}()
	health := func() (int, bool) {
		res, err := http.Get(url)
		if err != nil {
			return 0, false
		}
		res.Body.Close()
		return res.StatusCode, res.Close
	}
	status, _ := health()
	is.Equal(status, http.StatusOK)

	cancel() // as SIGTERM would
	deadline := time.Now().Add(time.Second)
	for status == http.StatusOK && time.Now().Before(deadline) {
		status, _ = health()
	}
	// Still accepting, and telling load balancers to go elsewhere.
	status, closed := health()
	is.Equal(status, http.StatusServiceUnavailable)
	is.True(closed) // no keep-alive: clients reconnect, elsewhere
	is.NoErr(<-served)
	_, err = net.Dial("tcp", ln.Addr().String())
	is.True(err != nil) // stopped once the delay was over
}

func TestSecondSignalEndsTheShutdownDelay(t *testing.T) {
	is := is.New(t)
	addr := freeAddr(t)
	cmd := serverCmd("serve", "-addr", addr, "-data", t.TempDir(), "-shutdown-delay", "1h")
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	waitUp(t, addr)
	is.NoErr(cmd.Process.Signal(syscall.SIGTERM))
	for status := 200; status == 200; { // the delay has begun
		res, err := http.Get("http://" + addr + "/healthz")
		is.NoErr(err)
		res.Body.Close()
		status = res.StatusCode
	}
	is.NoErr(cmd.Process.Signal(syscall.SIGTERM))
	is.True(waitExit(t, cmd, "the second SIGTERM did not end the server") != nil) // ended by the signal
}

// TestHangUpStopsTheServerCleanly: SIGHUP, which a closed terminal or SSH
// session sends, killed the server without a drain (or a replica's final
// sync); it now stops it as SIGTERM does.
func TestHangUpStopsTheServerCleanly(t *testing.T) {
	is := is.New(t)
	addr := freeAddr(t)
	cmd := serverCmd("serve", "-addr", addr, "-data", t.TempDir())
	var stderr pdtest.LockedBuffer
	cmd.Stderr = &stderr
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	waitUp(t, addr)
	is.NoErr(cmd.Process.Signal(syscall.SIGHUP))
	is.NoErr(waitExit(t, cmd, "SIGHUP did not stop the server")) // drained and stopped, not killed by the signal
	is.True(strings.Contains(stderr.String(), "shutting down"))
}

// waitExit waits at most a minute for the started cmd to end and returns
// what its Wait returned; past the minute the test fails with why.
func waitExit(t *testing.T, cmd *exec.Cmd, why string) error {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(time.Minute):
		t.Fatal(why)
		return nil
	}
}

func TestSlowAndGreedyClients(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := defaultLimits
	lim.readHeader, lim.maxHeaderBytes = 200*time.Millisecond, 4<<10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	go runServer(ctx, ln, ok, slog.New(slog.NewTextHandler(io.Discard, nil)), lim)
	addr := ln.Addr().String()

	t.Run("StalledHeadersAreCutOff", func(t *testing.T) {
		is := is.New(t)
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		defer c.Close()
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // never finishes
		is.NoErr(err)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c) // the server closes the connection
		is.NoErr(err)
	})
	t.Run("OversizedHeadersAreRefused", func(t *testing.T) {
		is := is.New(t)
		req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
		is.NoErr(err)
		req.Header.Set("X-Big", strings.Repeat("x", 64<<10))
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		res.Body.Close()
		is.Equal(res.StatusCode, http.StatusRequestHeaderFieldsTooLarge)
	})
	t.Run("OrdinaryRequestsStillServed", func(t *testing.T) {
		is := is.New(t)
		res, err := http.Get("http://" + addr + "/")
		is.NoErr(err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		is.Equal(string(b), "ok")
	})
}

func TestShutdownUnderLoadLosesNoAcknowledgedWrite(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	store, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	_, admin, err := store.CreateProject(context.Background(), "acme", "")
	is.NoErr(err)
	_, _, err = store.CreateTable(context.Background(), "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		served <- runServer(ctx, ln, httpapi.New(store, nil), logger, defaultLimits)
		store.Close() // as serve does, once the requests are drained
	}()

	var acked atomic.Int64
	var cut atomic.Int64
	var wg sync.WaitGroup
	body := `[` + strings.Repeat(`{"v":"x"},`, 49) + `{"v":"x"}]`
	for range 6 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for {
				req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/projects/acme/records/t", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+admin.Token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					return // the server has stopped accepting
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || !json.Valid(b) {
					cut.Add(1) // a response cut mid-body
					return
				}
				if res.StatusCode == http.StatusCreated {
					acked.Add(50)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	cancel() // SIGTERM
	wg.Wait()
	is.NoErr(<-served)
	is.Equal(cut.Load(), int64(0))
	is.True(acked.Load() > 0)

	reopened, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer reopened.Close()
	res, err := reopened.Query(context.Background(), "acme", projectdata.QueryRequest{SQL: `SELECT count(*) AS n FROM t`})
	is.NoErr(err)
	is.Equal(res.Rows[0]["n"], acked.Load())
}
