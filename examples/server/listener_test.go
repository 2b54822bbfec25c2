package main

import (
	"bytes"
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
