package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	pd "github.com/projectdata/projectdata"
)

// changeQuery reads the after, tables and limit parameters of the change
// routes.
func changeQuery(q url.Values) (pd.ChangeQuery, error) {
	var cq pd.ChangeQuery
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return cq, errorf(pd.ErrInvalidRequest, "after must be a change id, 0 or more")
		}
		cq.After = n
	}
	if v := q.Get("tables"); v != "" {
		cq.Tables = splitList(v)
	}
	var offset int
	if err := queryPage(q, &cq.Limit, &offset); err != nil {
		return cq, err
	}
	return cq, nil
}

func (h *Handler) listChanges(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	cq, err := changeQuery(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	page, err := h.store.ListChanges(ctx, ps.ByName("project"), cq)
	return http.StatusOK, page, err
}

// streamChanges serves the change log as Server-Sent Events (CONTRACT
// §12): one event per change, id = change id, event = op, data = the
// change. It starts after Last-Event-ID, else ?after=, else now. Errors
// found before the stream starts answer with the envelope (among them the
// Store's bound on the streams of one token: 503 server_busy); later ones
// end the stream with an "error" event. The stream's follower has ended
// when the handler returns, so that its place among the token's streams
// is free at once.
func (h *Handler) streamChanges(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, _ *exchange) error {
	slug := ps.ByName("project")
	cq, err := changeQuery(r.URL.Query())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fromNow := false
	switch last := r.Header.Get("Last-Event-ID"); {
	case last != "":
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			return errorf(pd.ErrInvalidRequest, "Last-Event-ID must be a change id")
		}
		cq.After = n
	case r.URL.Query().Get("after") == "": // no after (after= is none, as limit= is): from now
		if cq.After, err = h.store.LastChangeID(ctx, slug); err != nil {
			return err
		}
		fromNow = true
	}
	select {
	case <-h.streamsDone:
		return errorf(pd.ErrServerBusy, "the server is shutting down")
	default:
	}

	// The follower's changes, and the points it has read past (a
	// pd.Change with only an ID: the changes up to it were of other
	// tables), in order.
	changes := make(chan pd.Change, 64)
	failed := make(chan error, 1)
	following := make(chan struct{}) // closed once the follower is admitted and has checked the resume point
	cq.Passed = func(after int64) {
		select {
		case changes <- pd.Change{ID: after}:
		case <-ctx.Done():
		}
	}
	cq.Following = func() { close(following) }
	ended := make(chan struct{})
	defer func() { cancel(); <-ended }() // on every return: the follower leaves before the handler does
	go func() {
		defer close(ended)
		defer close(changes)
		for c, err := range h.store.FollowChanges(ctx, slug, cq) {
			if err != nil {
				failed <- err
				return
			}
			select {
			case changes <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Refuse a stream beyond the token's bound, an expired resume point
	// or bad tables with the envelope, before the stream.
	select {
	case <-following:
	case err := <-failed:
		return err
	case <-h.streamsDone:
		return errorf(pd.ErrServerBusy, "the server is shutting down")
	case <-ctx.Done():
		return nil
	}

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK) // the stream's head, and no stream
		return nil
	}
	w.WriteHeader(http.StatusOK)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), timeout: h.opts.StreamWriteTimeout}
	if fromNow {
		out.startAt(cq.After)
	}
	if !out.flush() {
		return nil
	}
	ping := time.NewTicker(h.opts.StreamPing)
	defer ping.Stop()
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				select {
				case err := <-failed:
					out.error(h, r, err)
				default:
				}
				return nil
			}
			// Send what is queued in one write.
			for more := true; more; {
				if c.Table == "" {
					out.passed = max(out.passed, c.ID)
				} else if !out.change(c) {
					return nil
				}
				select {
				case c, more = <-changes:
				default:
					more = false
				}
			}
			if !out.flush() {
				return nil
			}
		case <-ping.C:
			out.ping()
			if !out.flush() {
				return nil
			}
		case <-h.streamsDone:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// eventWriter writes Server-Sent Events, each write under a deadline: a
// client that does not take its events in time is dropped (it resumes with
// Last-Event-ID).
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	failed  bool
	sent    int64 // the id of the last event sent
	passed  int64 // the point the follower read past, changes of other tables after sent
}

// change appends one change event; false when it cannot be encoded. The
// change's JSON is the one the feed encoded once for every stream
// (MarshalJSON, not json.Marshal, which would check it again per stream).
func (e *eventWriter) change(c pd.Change) bool {
	data, err := c.MarshalJSON()
	if err != nil {
		return false
	}
	e.buf = append(e.buf, "id: "...)
	e.buf = strconv.AppendInt(e.buf, c.ID, 10)
	e.buf = append(e.buf, "\nevent: "...)
	e.buf = append(e.buf, c.Op...)
	e.buf = append(e.buf, "\ndata: "...)
	e.buf = append(e.buf, data...)
	e.buf = append(e.buf, "\n\n"...)
	e.sent = c.ID
	return true
}

// ping appends the ping comment and, when the follower has read past
// changes of other tables since the last event, an id line: the block
// dispatches no event, but moves the client's Last-Event-ID, so that a
// stream of some tables resumes past the others' changes, and its resume
// point does not fall behind the log's retention while only they change.
func (e *eventWriter) ping() {
	e.buf = append(e.buf, ": ping\n"...)
	if e.passed > e.sent {
		e.buf = append(e.buf, "id: "...)
		e.buf = strconv.AppendInt(e.buf, e.passed, 10)
		e.buf = append(e.buf, '\n')
		e.sent = e.passed
	}
	e.buf = append(e.buf, '\n')
}

// startAt appends a ping whose id line is the point a stream that starts
// from now starts after: a client cut off before its first event would
// otherwise reconnect without Last-Event-ID, start from a later now, and
// miss the changes between.
func (e *eventWriter) startAt(after int64) {
	e.buf = append(e.buf, ": ping\nid: "...)
	e.buf = strconv.AppendInt(e.buf, after, 10)
	e.buf = append(e.buf, "\n\n"...)
	e.sent = after
}

// error writes a final "error" event with the error's code and message.
func (e *eventWriter) error(h *Handler, r *http.Request, err error) {
	code, msg := pd.ErrorCode(err), err.Error()
	if _, known := statusOf[code]; !known || code == pd.ErrInternal {
		h.log.Error("change stream", "path", r.URL.Path, "err", err)
		code, msg = pd.ErrInternal, "internal error"
	}
	data, _ := json.Marshal(errorBody{Code: code, Message: msg})
	e.buf = append(e.buf, "event: error\ndata: "...)
	e.buf = append(e.buf, data...)
	e.buf = append(e.buf, "\n\n"...)
	e.flush()
}

// flush writes and flushes the buffered events; false when the client is
// gone or too slow.
func (e *eventWriter) flush() bool {
	if e.failed {
		return false
	}
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		e.failed = true
		return false
	}
	if len(e.buf) > 0 {
		if _, err := e.w.Write(e.buf); err != nil {
			e.failed = true
			return false
		}
		e.buf = e.buf[:0]
	}
	if err := e.rc.Flush(); err != nil {
		e.failed = true
		return false
	}
	return true
}
