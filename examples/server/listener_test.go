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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestMaxConnsLeavesTheRestInTheBacklog(t *testing.T) {
	is := is.New(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	ln := newBoundedListener(tcp, 2, slog.New(slog.DiscardHandler))
	var (
		inside, peak atomic.Int64
		release      = make(chan struct{})
		arrived      = make(chan struct{}, 3)
	)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inside.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		arrived <- struct{}{}
		<-release
		inside.Add(-1)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			tr := &http.Transport{DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			res, err := (&http.Client{Transport: tr}).Get("http://" + tcp.Addr().String() + "/")
			if err == nil {
				res.Body.Close()
			}
		})
	}
	<-arrived
	<-arrived
	select {
	case <-arrived:
		t.Fatal("a third connection was served while two were open")
	case <-time.After(200 * time.Millisecond): // the third waits in the backlog
	}
	close(release)
	wg.Wait()
	is.Equal(peak.Load(), int64(2))
	is.Equal(len(arrived), 1) // the third was served once a slot was free
}

// flakyListener fails its first n Accepts for want of file descriptors.
type flakyListener struct {
	net.Listener
	n atomic.Int64
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

func TestOutOfFileDescriptorsWaitsAndLogsOncePerMinute(t *testing.T) {
	is := is.New(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	flaky := &flakyListener{Listener: tcp}
	flaky.n.Store(6)
	var logged bytes.Buffer
	ln := newBoundedListener(flaky, 8, slog.New(slog.NewTextHandler(&logged, nil)))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()

	res, err := http.Get("http://" + tcp.Addr().String() + "/") // served once descriptors are back
	is.NoErr(err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	is.Equal(string(body), "ok")
	is.Equal(strings.Count(logged.String(), "out of file descriptors"), 1) // six failures, one line
}

// countingListener counts the connections it has open, and the most open at
// once.
type countingListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

// countedConn is one of its countingListener's open connections until it
// closes.
type countedConn struct {
	net.Conn
	once sync.Once
	l    *countingListener
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// serveBounded serves h with runServer on a boundedListener of max slots
// until the test ends; idle connections and request headers may wait a
// minute, far longer than a test waits for an answer. The countingListener
// counts the connections the boundedListener holds open.
func serveBounded(t *testing.T, max int, h http.Handler) (addr string, counted *countingListener) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted = &countingListener{Listener: tcp}
	lim := defaultLimits
	lim.readHeader, lim.idle, lim.drain = time.Minute, time.Minute, 5*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- runServer(ctx, newBoundedListener(counted, max, slog.New(slog.DiscardHandler)), h, slog.New(slog.DiscardHandler), lim)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("runServer: %v", err)
		}
	})
	return tcp.Addr().String(), counted
}

// testHandler answers "ok" at /healthz; at /block it tells started, then
// answers "done" once release is closed.
func testHandler(started chan<- struct{}, release <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "done")
	})
	return mux
}

// rawClient is a keep-alive connection that sends its requests by hand, so
// that a test knows which connection the server closed.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{conn: conn, r: bufio.NewReader(conn)}
}

// send sends a GET of path.
func (c *rawClient) send(path string) error {
	_, err := io.WriteString(c.conn, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n")
	return err
}

// answer reads the body of the next answer, waiting 5 s at most.
func (c *rawClient) answer() (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return string(body), err
}

// get sends a GET of path and reads its answer.
func (c *rawClient) get(path string) (string, error) {
	if err := c.send(path); err != nil {
		return "", err
	}
	return c.answer()
}

// closedByServer tells whether the server closed the connection: reading
// ends without a timeout within 5 s.
func (c *rawClient) closedByServer() bool {
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// newClient is an HTTP client of its own connections, giving up after 5 s.
func newClient(t *testing.T, keepAlive bool) *http.Client {
	tr := &http.Transport{DisableKeepAlives: !keepAlive}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// getBody GETs url and returns the body.
func getBody(c *http.Client, url string) (string, error) {
	res, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return string(body), err
}

func TestMaxConnsClosesTheLongestIdleForANewClient(t *testing.T) {
	is := is.New(t)
	addr, _ := serveBounded(t, 4, testHandler(nil, nil))
	var idle []*rawClient
	for range 4 { // every slot holds a keep-alive connection between requests
		c := dialRaw(t, addr)
		body, err := c.get("/healthz")
		is.NoErr(err)
		is.Equal(body, "ok")
		idle = append(idle, c)
		time.Sleep(20 * time.Millisecond) // each idle longer than the next
	}

	body, err := getBody(newClient(t, true), "http://"+addr+"/healthz") // not after the minute of the idle timeout
	is.NoErr(err)
	is.Equal(body, "ok")
	is.True(idle[0].closedByServer()) // the longest idle, closed for room
	for _, c := range idle[2:] {      // the most recent still serve
		body, err := c.get("/healthz")
		is.NoErr(err)
		is.Equal(body, "ok")
	}
}

func TestMaxConnsClosesASilentConnectionForANewClient(t *testing.T) {
	is := is.New(t)
	addr, _ := serveBounded(t, 2, testHandler(nil, nil))
	silent := []*rawClient{dialRaw(t, addr), dialRaw(t, addr)} // connected, sending nothing

	body, err := getBody(newClient(t, true), "http://"+addr+"/healthz") // not after the minute of the header timeout
	is.NoErr(err)
	is.Equal(body, "ok")
	is.True(silent[0].closedByServer()) // silent past firstRequestGrace
}

func TestMaxConnsNeverClosesARunningRequest(t *testing.T) {
	is := is.New(t)
	started, release := make(chan struct{}, 2), make(chan struct{})
	done := sync.OnceFunc(func() { close(release) })
	addr, _ := serveBounded(t, 2, testHandler(started, release))
	t.Cleanup(done) // before the server drains
	running := dialRaw(t, addr)
	is.NoErr(running.send("/block"))
	<-started
	idle := dialRaw(t, addr)
	body, err := idle.get("/healthz")
	is.NoErr(err)
	is.Equal(body, "ok")

	// Room for a new client is made with the idle connection, though the
	// running one is older.
	client := newClient(t, false)
	body, err = getBody(client, "http://"+addr+"/healthz")
	is.NoErr(err)
	is.Equal(body, "ok")
	is.True(idle.closedByServer())

	// With a request running on each, a new client waits, past
	// firstRequestGrace too, and closes neither.
	second := dialRaw(t, addr)
	is.NoErr(second.send("/block"))
	<-started
	got := make(chan string, 1)
	go func() {
		body, err := getBody(newClient(t, false), "http://"+addr+"/healthz")
		if err != nil {
			body = err.Error()
		}
		got <- body
	}()
	select {
	case body := <-got:
		t.Fatalf("answered %q while both slots ran requests", body)
	case <-time.After(firstRequestGrace + time.Second):
	}
	done()
	for _, c := range []*rawClient{running, second} {
		body, err := c.answer()
		is.NoErr(err)
		is.Equal(body, "done")
	}
	is.Equal(<-got, "ok")
}

func TestMaxConnsHoldsWhileIdleConnectionsAreClosedForRoom(t *testing.T) {
	is := is.New(t)
	const max = 4
	addr, counted := serveBounded(t, max, testHandler(nil, nil))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 { // four times as many keep-alive clients as slots
		wg.Go(func() {
			client := newClient(t, true)
			for range 5 {
				if _, err := getBody(client, "http://"+addr+"/healthz"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err) // every client served, none waiting for another's idle timeout
	}
	is.Equal(counted.peak.Load(), int64(max)) // reached, never passed
}
