package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

const (
	// logFlushEvery is how long an INFO line (the access log's, one per
	// request) may wait in the buffer before it is written.
	logFlushEvery = 100 * time.Millisecond
	// logBufferBytes is how much is buffered before it is written at once.
	logBufferBytes = 64 << 10
)

// logBuffer gathers the server's log lines so that a busy server writes
// its access log in one write per logFlushEvery or logBufferBytes, not one
// per request (a write per request cost the server a tenth of its reads
// per second under load). Only the HTTP handler's INFO lines (the access
// log) wait: any other line is written at once with those before it (see
// newBufferedLoggers), so that what went wrong, and what the server and
// its replicator do, is neither lost nor late; access lines buffered when
// the process is killed (SIGKILL) are lost. Flush writes what is buffered;
// serve flushes before it returns.
type logBuffer struct {
	mu    sync.Mutex
	out   io.Writer
	every time.Duration // logFlushEvery
	buf   []byte
	timer *time.Timer // armed while buf holds lines
}

// Write buffers p, a log line (slog writes each line in one call).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	switch {
	case len(b.buf) >= logBufferBytes:
		b.flushLocked()
	case b.timer == nil:
		b.timer = time.AfterFunc(b.every, b.Flush)
	}
	return len(p), nil
}

// Flush writes what is buffered.
func (b *logBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *logBuffer) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 {
		return
	}
	// A log that cannot be written has nowhere to report it.
	b.out.Write(b.buf)
	if cap(b.buf) > 4*logBufferBytes {
		b.buf = nil // a burst of long lines does not stay allocated
	} else {
		b.buf = b.buf[:0]
	}
}

// newBufferedLoggers returns the server's loggers, text lines to out
// through one logBuffer (so that their lines keep their order), and the
// buffer, to flush at exit: logger writes every line at once, access (the
// HTTP handler's) lets its INFO lines wait.
func newBufferedLoggers(out io.Writer) (logger, access *slog.Logger, buf *logBuffer) {
	buf = &logBuffer{out: out, every: logFlushEvery}
	text := slog.NewTextHandler(buf, nil)
	return slog.New(flushingHandler{text, buf, slog.LevelDebug}), slog.New(flushingHandler{text, buf, slog.LevelWarn}), buf
}

// flushingHandler flushes its buffer after a record at level from or above.
type flushingHandler struct {
	slog.Handler
	buf  *logBuffer
	from slog.Level
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.from {
		h.buf.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.buf, h.from}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.buf, h.from}
}
