package main

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// defaultMaxConns is the default of -max-conns.
const defaultMaxConns = 1024

// boundedListener holds at most max connections open at once: Accept waits
// for one to close before it takes the next, so the others wait in the
// kernel's backlog, not in the server's memory. HTTP/1.1 carries one
// request at a time on a connection, so this bounds the requests in flight
// too. Running out of file descriptors does not stop the server, nor flood
// its log: Accept waits and retries, logging at most one line a minute.
type boundedListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	close sync.Once
	log   *slog.Logger

	logMu   sync.Mutex
	lastLog time.Time
	now     func() time.Time
}

func newBoundedListener(ln net.Listener, max int, log *slog.Logger) *boundedListener {
	return &boundedListener{
		Listener: ln,
		slots:    make(chan struct{}, max),
		done:     make(chan struct{}),
		log:      log,
		now:      time.Now,
	}
}

// Accept returns the next connection once fewer than max are open.
func (l *boundedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	wait := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		}
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
			<-l.slots
			return nil, err
		}
		l.logExhausted(err)
		select {
		case <-time.After(wait):
		case <-l.done:
			<-l.slots
			return nil, net.ErrClosed
		}
		wait = min(2*wait, time.Second)
	}
}

// Close stops accepting; connections already open stay.
func (l *boundedListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// logExhausted logs running out of file descriptors, once a minute at most.
func (l *boundedListener) logExhausted(err error) {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	if now := l.now(); l.lastLog.IsZero() || now.Sub(l.lastLog) >= time.Minute {
		l.lastLog = now
		l.log.Warn("out of file descriptors: new connections wait", "err", err)
	}
}

// slotConn frees its listener slot when it closes.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
