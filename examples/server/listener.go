package main

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// defaultMaxConns is the default of -max-conns.
const defaultMaxConns = 1024

// firstRequestGrace is how long a new connection may wait for its first
// request before it may be closed to make room. Clients send a request as
// soon as they have connected; a connection silent longer holds a slot for
// nothing, or for later (a browser's speculative connection, which the
// browser opens again once it finds it closed).
const firstRequestGrace = time.Second

// boundedListener holds at most max connections open at once: Accept waits
// for one to close before it takes the next, so the others wait in the
// kernel's backlog, not in the server's memory. HTTP/1.1 carries one
// request at a time on a connection, so this bounds the requests in flight
// too. Running out of file descriptors does not stop the server, nor flood
// its log: Accept waits and retries, logging at most one line a minute.
//
// Connections between requests do not keep new clients out: when every
// slot is taken, Accept closes the connection idle the longest (a
// keep-alive connection between requests: closing it is what the idle
// timeout does, and its client connects again) or, if none is idle, the
// oldest that has sent nothing for firstRequestGrace since it was accepted.
// A connection whose request runs, such as a change stream or a download,
// is never closed for room. Accept cannot see whether a client waits in the
// backlog, so it makes room as soon as it waits for the next connection: it
// closes at most one connection for each one it accepts. This needs the
// listener's ConnState method as the http.Server's ConnState hook (as
// runServer sets it); without it, Accept only waits.
type boundedListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	close sync.Once
	log   *slog.Logger

	logMu   sync.Mutex
	lastLog time.Time
	now     func() time.Time

	// roomMu guards idle, fresh and the place of each slotConn in them.
	roomMu sync.Mutex
	// idle holds the connections between two requests, the longest idle
	// first; fresh those that have sent no request yet, the oldest first.
	// Times only grow, so appending keeps them in order.
	idle, fresh list.List
	// turnedIdle wakes an Accept waiting for room when a connection turns
	// idle: it may be closed now.
	turnedIdle chan struct{}
}

func newBoundedListener(ln net.Listener, max int, log *slog.Logger) *boundedListener {
	return &boundedListener{
		Listener:   ln,
		slots:      make(chan struct{}, max),
		done:       make(chan struct{}),
		log:        log,
		now:        time.Now,
		turnedIdle: make(chan struct{}, 1),
	}
}

// Accept returns the next connection once fewer than max are open.
func (l *boundedListener) Accept() (net.Conn, error) {
	if err := l.takeSlot(); err != nil {
		return nil, err
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

// takeSlot takes a slot for the next connection, making room when every
// slot is taken; it returns net.ErrClosed once the listener is closed.
func (l *boundedListener) takeSlot() error {
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		case <-l.done:
			return net.ErrClosed
		default:
		}
		c, retry := l.nextToClose()
		if c != nil {
			c.Close() // frees its slot, taken on the next turn
			continue
		}
		var graceOver <-chan time.Time
		if retry > 0 {
			graceOver = time.After(retry)
		}
		select {
		case l.slots <- struct{}{}:
			return nil
		case <-l.turnedIdle:
		case <-graceOver:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

// nextToClose takes the connection to close to make room out of idle or
// fresh: the one idle the longest, else the oldest fresh one past
// firstRequestGrace. With none, retry is how long until the oldest fresh
// one will be past it, 0 if there is no fresh connection.
func (l *boundedListener) nextToClose() (c *slotConn, retry time.Duration) {
	l.roomMu.Lock()
	defer l.roomMu.Unlock()
	if e := l.idle.Front(); e != nil {
		c = e.Value.(*slotConn)
		c.leave()
		return c, 0
	}
	if e := l.fresh.Front(); e != nil {
		c = e.Value.(*slotConn)
		if waited := l.now().Sub(c.since); waited < firstRequestGrace {
			return nil, firstRequestGrace - waited
		}
		c.leave()
		return c, 0
	}
	return nil, 0
}

// ConnState is the http.Server's ConnState hook that lets Accept close
// connections between requests to make room. It runs on every change of
// state, so it only moves c between idle and fresh.
//
// A request may arrive on an idle connection just as Accept closes it; as
// when the idle timeout ends a connection, the client sends it again on a
// new one (net/http's Transport does for requests it may repeat).
func (l *boundedListener) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*slotConn)
	if !ok {
		return
	}
	l.roomMu.Lock()
	c.leave()
	switch state {
	case http.StateNew:
		c.wait(&l.fresh, l.now())
	case http.StateIdle:
		c.wait(&l.idle, l.now())
	}
	l.roomMu.Unlock()
	if state == http.StateIdle {
		select {
		case l.turnedIdle <- struct{}{}:
		default: // a wake-up is already pending
		}
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

	// Guarded by the listener's roomMu: the list of connections that may
	// be closed for room c is in (nil if none), its element there, and
	// since when it waits for a request.
	in    *list.List
	elem  *list.Element
	since time.Time
}

// Close closes the connection and frees its slot; closing it again frees
// nothing more.
func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// wait puts c at the back of in, waiting for a request since now.
func (c *slotConn) wait(in *list.List, now time.Time) {
	c.in, c.elem, c.since = in, in.PushBack(c), now
}

// leave takes c out of the list it is in, if any.
func (c *slotConn) leave() {
	if c.in != nil {
		c.in.Remove(c.elem)
		c.in, c.elem = nil, nil
	}
}
