// Package httpapi serves the projectdata REST surface over a
// *projectdata.Store: every route of the specification and the contract's
// extensions, each answer in the common envelope.
//
// The package is thin: a handler decodes the request, calls the Store and
// encodes the result. Every rule lives in the Store, so an application that
// embeds the Store gets the same behaviour without HTTP.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/projectdata/projectdata"
)

// Options configures a Handler. A nil *Options, and the zero value of every
// field, mean the documented default.
type Options struct {
	// Logger receives one access log line per request and the details of
	// internal errors; never a token. Zero: discard.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (payload_too_large). Zero: 8 MiB.
	MaxBodyBytes int64
	// Now returns the time for meta.generated_at. Zero: time.Now.
	Now func() time.Time
	// StreamPing is how often an idle change stream sends a ": ping"
	// comment. Zero: 15s.
	StreamPing time.Duration
	// StreamWriteTimeout bounds each write of a change stream: a client
	// that does not take its events within it is disconnected (and
	// resumes with Last-Event-ID). Zero: 30s.
	StreamWriteTimeout time.Duration
}

// Handler is the HTTP API. It is safe for concurrent use.
type Handler struct {
	store  *projectdata.Store
	router *httprouter.Router
	log    *slog.Logger
	opts   Options

	streamsDone chan struct{} // closed by CloseStreams
	closeOnce   sync.Once
}

// New returns the HTTP API over store. A nil opts means the defaults.
func New(store *projectdata.Store, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StreamPing <= 0 {
		o.StreamPing = 15 * time.Second
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = 30 * time.Second
	}
	h := &Handler{store: store, log: o.Logger, opts: o, streamsDone: make(chan struct{})}
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.HandleMethodNotAllowed = true
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.writeError(w, req, newExchange(w, req, h), errorf(projectdata.ErrRouteNotFound, "no route for %s %s", req.Method, req.URL.Path))
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.writeError(w, req, newExchange(w, req, h), errorf(projectdata.ErrMethodNotAllowed, "method %s is not allowed here (allowed: %s)", req.Method, w.Header().Get("Allow")))
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		h.log.Error("panic", "method", req.Method, "path", req.URL.Path, "panic", v)
		h.writeError(w, req, newExchange(w, req, h), errorf(projectdata.ErrInternal, "internal error"))
	}
	h.router = r
	h.routes()
	return h
}

// CloseStreams ends every change stream being served and refuses new ones
// (503 server_busy). A stream never ends by itself, and http.Server's
// Shutdown waits for every handler: register it with
// http.Server.RegisterOnShutdown so a graceful shutdown does not wait for
// streams. It is idempotent.
func (h *Handler) CloseStreams() {
	h.closeOnce.Do(func() { close(h.streamsDone) })
}

// ServeHTTP serves one request and logs it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	h.router.ServeHTTP(rec, r)
	h.log.Info("request",
		"method", r.Method,
		"path", r.URL.Path,
		"status", rec.status,
		"bytes", rec.bytes,
		"duration_ms", float64(time.Since(start).Microseconds())/1000,
		"request_id", rec.Header().Get("X-Request-Id"),
	)
}

// statusRecorder remembers the status and size of a response for the
// access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// exchange is what one request carries through its handler: its id and
// the operation headers to echo.
type exchange struct {
	requestID   string
	opKey       string
	opRunID     string
	opGrouping  string
	opHeaderErr error
}

var runIDPattern = regexp.MustCompile(`^oprun_[A-Za-z0-9_-]{1,64}$`)

// newExchange gives the request an id (sent as X-Request-Id) and reads the
// operation headers.
func newExchange(w http.ResponseWriter, r *http.Request, h *Handler) *exchange {
	x := &exchange{requestID: "req_" + randomHex(12)}
	w.Header().Set("X-Request-Id", x.requestID)
	key := r.Header.Get("X-Operation-Key")
	runID, runSent := r.Header.Get("X-Operation-Run-Id"), r.Header.Values("X-Operation-Run-Id") != nil
	switch {
	case runSent && !runIDPattern.MatchString(runID):
		x.opHeaderErr = errorf(projectdata.ErrInvalidOperationRunID, "X-Operation-Run-Id must be oprun_ followed by 1 to 64 of A-Z, a-z, 0-9, _ and -")
	case runSent:
		x.opKey, x.opRunID, x.opGrouping = key, runID, "accepted_provided_run"
	case key != "":
		x.opKey, x.opRunID, x.opGrouping = key, "oprun_"+randomHex(12), "generated_run"
	}
	if len(x.opKey) > 200 {
		x.opKey = ""
		x.opRunID, x.opGrouping = "", ""
		x.opHeaderErr = errorf(projectdata.ErrInvalidRequest, "X-Operation-Key must be at most 200 bytes")
	}
	return x
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// endpoint is one route's handler: it gets the request with the caller in
// its context and returns the success status and data, or an error.
type endpoint func(r *http.Request, ps httprouter.Params) (status int, data any, err error)

// streamEndpoint is a route's handler that writes its own response body (a
// file), or returns an error before writing anything.
type streamEndpoint func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

// handle registers a route that needs a token allowed to do op and answers
// with the envelope.
func (h *Handler) handle(method, path string, op projectdata.Operation, fn endpoint) {
	h.router.Handle(method, path, h.guard(op, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) {
		status, data, err := fn(r, ps)
		if err != nil {
			h.writeError(w, r, x, err)
			return
		}
		h.writeData(w, x, status, data)
	}))
}

// handleStream registers a route that needs a token allowed to do op and
// writes its own body; its errors still answer with the envelope.
func (h *Handler) handleStream(method, path string, op projectdata.Operation, fn streamEndpoint) {
	h.router.Handle(method, path, h.guard(op, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) {
		if err := fn(w, r, ps); err != nil {
			h.writeError(w, r, x, err)
		}
	}))
}

// guard runs the checks every route shares, in the contract's order: route
// (the router did it), project, token, role, operation headers; then serve
// handles the body and the operation, with the caller in the context.
func (h *Handler) guard(op projectdata.Operation, serve func(http.ResponseWriter, *http.Request, httprouter.Params, *exchange)) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		x := newExchange(w, r, h)
		ctx, err := h.authenticate(r.Context(), w, ps.ByName("project"), r.Header.Get("Authorization"), op)
		if err == nil {
			err = x.opHeaderErr
		}
		if err != nil {
			h.writeError(w, r, x, err)
			return
		}
		serve(w, r.WithContext(ctx), ps, x)
	}
}

// authenticate checks the project, the bearer token and its role, and
// returns a context carrying the caller. The Store checks the project
// before the token, so an unknown project is project_not_found whatever the
// token.
func (h *Handler) authenticate(ctx context.Context, w http.ResponseWriter, slug, authorization string, op projectdata.Operation) (context.Context, error) {
	secret := ""
	if scheme, rest, ok := strings.Cut(authorization, " "); ok && strings.EqualFold(scheme, "Bearer") {
		secret = strings.TrimSpace(rest)
	}
	caller, err := h.store.Authenticate(ctx, slug, secret)
	if projectdata.ErrorCode(err) == projectdata.ErrInvalidToken {
		w.Header().Set("WWW-Authenticate", `Bearer realm="projectdata"`)
		if secret == "" {
			err = errorf(projectdata.ErrInvalidToken, "send a Project API Token as Authorization: Bearer pat_…")
		}
	}
	if err != nil {
		return nil, err
	}
	if err := caller.Authorize(op); err != nil {
		return nil, err
	}
	return projectdata.WithCaller(ctx, caller), nil
}

func errorf(code projectdata.Code, format string, args ...any) error {
	return &projectdata.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
