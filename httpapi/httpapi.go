// Package httpapi serves the projectdata REST surface over a
// *projectdata.Store: every route of the specification and the contract's
// extensions, each answer in the common envelope.
//
// The package is thin: a handler decodes the request, calls the Store and
// encodes the result. Every rule lives in the Store, so an application that
// embeds the Store gets the same behaviour without HTTP.
//
// Besides the project routes, GET /healthz answers without a token (503
// once BeginShutdown is called or the Store is closed), GET /openapi.json
// serves the OpenAPI 3.1 document of every route, parameter, body, answer
// and error code (no token), and GET /metrics
// serves Options.Metrics when set (package prommetrics provides Prometheus
// metrics). OPTIONS is answered 204 with Allow, and with the CORS headers
// for the origins of Options.AllowedOrigins. Links in answers (an export's
// download_url) start with the prefix the Handler is mounted under.
package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/projectdata/projectdata"
)

// Options configures a Handler. A nil *Options, and the zero value of every
// field, mean the documented default.
type Options struct {
	// Logger receives one access log line per request and the details of
	// internal errors; never a token. The line of a 503 says, as "busy",
	// which bound or queue refused it (its message). Zero: discard.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (payload_too_large). Zero: 8 MiB.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the request bodies read at once, across
	// all requests: each takes its Content-Length (MaxBodyBytes when the
	// length is unknown) before its body is read, and gives it back when
	// it is answered. A request that does not fit waits for others, in
	// turn, up to BodyWait, then gets 503 server_busy with Retry-After.
	// Decoded and bound, a body takes two to three times its bytes. Zero:
	// 16 × MaxBodyBytes (128 MiB).
	MaxBodyBytesInFlight int64
	// MaxBodyBytesPerToken bounds the part of MaxBodyBytesInFlight that
	// one token's requests hold at once, so that a client sending large
	// bodies slowly cannot hold all of it: a request past it waits for the
	// token's own requests, up to BodyWait, and the requests of other
	// tokens go past it. Zero: a quarter of MaxBodyBytesInFlight (32 MiB),
	// at least MaxBodyBytes.
	MaxBodyBytesPerToken int64
	// MaxBodyBytesPerProject bounds, likewise, the part that the requests
	// of one project's tokens hold at once. Zero: half of
	// MaxBodyBytesInFlight (64 MiB), at least MaxBodyBytes.
	MaxBodyBytesPerProject int64
	// BodyWait bounds the wait for room under MaxBodyBytesInFlight (and
	// the parts above). Zero: 2s.
	BodyWait time.Duration
	// Now returns the time for meta.generated_at. Zero: time.Now.
	Now func() time.Time
	// AllowedOrigins lists the browser origins (scheme://host[:port]) that
	// may call the API from another origin (CORS); "*" allows every origin.
	// Zero: none, and no CORS header is ever sent.
	AllowedOrigins []string
	// BasePath is the path prefix the Handler is mounted under, such as
	// "/api", for the links it returns (an export's download_url). Zero:
	// the prefix is read from each request, as the part of its path that a
	// wrapper such as http.StripPrefix removed; set BasePath when a proxy
	// removes the prefix before the request reaches the server.
	BasePath string
	// Metrics, when set, receives an observation of every request and
	// serves GET /metrics (no token). Zero: no metrics, and /metrics is
	// route_not_found. Package prommetrics provides one for Prometheus.
	Metrics Metrics
	// StreamPing is how often an idle change stream sends a ": ping"
	// comment. Zero: 15s.
	StreamPing time.Duration
	// StreamWriteTimeout bounds each write of a change stream: a client
	// that does not take its events within it is disconnected (and
	// resumes with Last-Event-ID). It bounds each 64 KiB of an export
	// download too, and each 32 KiB of a list of tokens, in place of the
	// server's WriteTimeout, which would cut a large answer short. Zero:
	// 30s.
	StreamWriteTimeout time.Duration
	// MaxDownloadsPerToken bounds the export downloads one token runs at
	// once: a download holds its connection for as long as its client
	// reads, and the server serves a bounded number of connections. One
	// more answers 503 server_busy with Retry-After. Zero: 16.
	MaxDownloadsPerToken int
}

// Handler is the HTTP API. It is safe for concurrent use.
type Handler struct {
	store  *projectdata.Store
	router *httprouter.Router
	log    *slog.Logger
	opts   Options

	origins      originSet      // from Options.AllowedOrigins
	shuttingDown atomic.Bool    // set by BeginShutdown
	bodies       sync.Pool      // *bytes.Buffer for encoding responses
	bodyRoom     *bodyBudget    // Options.MaxBodyBytesInFlight
	downloads    downloadCounts // Options.MaxDownloadsPerToken
	streamsDone  chan struct{}  // closed by CloseStreams
	closeOnce    sync.Once
	registered   []string // "METHOD /path" of every route, in order (register)
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
	if o.MaxBodyBytesInFlight <= 0 {
		o.MaxBodyBytesInFlight = 16 * o.MaxBodyBytes
	}
	if o.MaxBodyBytesPerToken <= 0 {
		o.MaxBodyBytesPerToken = max(o.MaxBodyBytesInFlight/4, o.MaxBodyBytes)
	}
	if o.MaxBodyBytesPerProject <= 0 {
		o.MaxBodyBytesPerProject = max(o.MaxBodyBytesInFlight/2, o.MaxBodyBytes)
	}
	if o.BodyWait <= 0 {
		o.BodyWait = 2 * time.Second
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
	if o.MaxDownloadsPerToken <= 0 {
		o.MaxDownloadsPerToken = 16
	}
	o.BasePath = strings.TrimSuffix(o.BasePath, "/")
	h := &Handler{store: store, log: o.Logger, opts: o, origins: newOriginSet(o.AllowedOrigins), streamsDone: make(chan struct{}), bodyRoom: newBodyBudget(o.MaxBodyBytesInFlight, o.MaxBodyBytesPerToken, o.MaxBodyBytesPerProject)}
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = true // OPTIONS is never method_not_allowed
	r.GlobalOPTIONS = http.HandlerFunc(h.options)
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
	h.operationsRoutes()
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

// ServeHTTP serves one request, logs it and reports it to Options.Metrics.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	h.allowOrigin(rec, r)
	h.router.ServeHTTP(rec, onEscapedPath(r))
	h.observe(rec, r, time.Since(start))
	if rec.aborted {
		// The answer had started when it failed: net/http cuts the
		// connection (HTTP/2: resets the stream) without ending the
		// body, so the client sees a broken answer, never a short one
		// that looks whole.
		panic(http.ErrAbortHandler)
	}
}

// onEscapedPath returns r routed on its path as the client escaped it: the
// router splits segments on the slashes sent, so an encoded slash (%2F)
// stays inside its segment, and the parameter reaches the Store, decoded
// by unescapeParams, to be judged as a name or id.
func onEscapedPath(r *http.Request) *http.Request {
	escaped := r.URL.EscapedPath()
	if escaped == r.URL.Path {
		return r
	}
	u := *r.URL
	u.Path, u.RawPath = escaped, ""
	r2 := *r
	r2.URL = &u
	return &r2
}

// unescapeParams decodes the route parameters of a request routed by
// onEscapedPath, in place.
func unescapeParams(ps httprouter.Params) {
	for i, p := range ps {
		if v, err := url.PathUnescape(p.Value); err == nil {
			ps[i].Value = v
		}
	}
}

// statusRecorder remembers what the access log and the metrics say of a
// response: its status and size, the route that served it, the error code
// and the token id of the caller.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	route   string           // the route's pattern; "" when none matched
	code    projectdata.Code // the error code; "" on success
	tokenID int64            // the caller's token id; 0 before authentication
	busy    string           // why a 503 was answered: its message, for the access log
	aborted bool             // the answer started and failed: ServeHTTP aborts it
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
	requestID string
	// The values of the two headers every response sets, kept here so
	// that setting them allocates nothing more (see setHeader).
	requestIDHeader, contentTypeHeader [1]string
	opKey                              string
	opRunID                            string
	opGrouping                         string
	opHeaderErr                        error
}

var runIDPattern = regexp.MustCompile(`^oprun_[A-Za-z0-9_-]{1,64}$`)

// newExchange gives the request an id (sent as X-Request-Id) and reads the
// operation headers.
func newExchange(w http.ResponseWriter, r *http.Request, h *Handler) *exchange {
	x := &exchange{requestID: randomID("req_")}
	setHeader(w, "X-Request-Id", &x.requestIDHeader, x.requestID)
	// The names in canonical form, as net/http reads them.
	keys := r.Header["X-Operation-Key"]
	runIDs, runSent := r.Header["X-Operation-Run-Id"]
	key, runID := "", ""
	if len(keys) > 0 {
		key = keys[0]
	}
	if len(runIDs) > 0 {
		runID = runIDs[0]
	}
	switch {
	case len(keys) > 1 || len(runIDs) > 1:
		// Which one a proxy in front read is unknown, as for Authorization.
		x.opHeaderErr = errorf(projectdata.ErrInvalidRequest, "send at most one X-Operation-Key and one X-Operation-Run-Id header")
		return x
	case !utf8.ValidString(key):
		// The envelope, JSON, could not echo it as sent.
		x.opHeaderErr = errorf(projectdata.ErrInvalidRequest, "X-Operation-Key must be UTF-8 text")
		return x
	case runSent && !runIDPattern.MatchString(runID):
		x.opHeaderErr = errorf(projectdata.ErrInvalidOperationRunID, "X-Operation-Run-Id must be oprun_ followed by 1 to 64 of A-Z, a-z, 0-9, _ and -")
	case runSent:
		x.opKey, x.opRunID, x.opGrouping = key, runID, "accepted_provided_run"
	case key != "":
		x.opKey, x.opRunID, x.opGrouping = key, randomID("oprun_"), "generated_run"
	}
	if len(x.opKey) > 200 {
		x.opKey = ""
		x.opRunID, x.opGrouping = "", ""
		x.opHeaderErr = errorf(projectdata.ErrInvalidRequest, "X-Operation-Key must be at most 200 bytes")
	}
	return x
}

// setHeader sets the response header name, in canonical form, to value as
// w.Header().Set does, with slot for the storage of the value's slice.
func setHeader(w http.ResponseWriter, name string, slot *[1]string, value string) {
	slot[0] = value
	w.Header()[name] = slot[:]
}

// randomID is prefix and 24 random hex digits, in one allocation (every
// request gets one). The digits identify, they guard nothing: they come
// from math/rand/v2's generator (ChaCha8, seeded by the system): 20 ns
// where crypto/rand took 90.
func randomID(prefix string) string {
	var raw [12]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(raw[8:], rand.Uint32())
	var buf [32]byte
	n := copy(buf[:], prefix)
	hex.Encode(buf[n:], raw[:])
	return string(buf[:n+2*len(raw)])
}

// endpoint is one route's handler: it gets the request and its context,
// which carries the caller (r.Context() may not), and returns the success
// status and data, or an error.
type endpoint func(ctx context.Context, r *http.Request, ps httprouter.Params) (status int, data any, err error)

// streamEndpoint is a route's handler that writes its own response body (a
// file, events, an envelope as its data is read), or returns an error
// before writing anything.
type streamEndpoint func(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) error

// handle registers a route that needs a token allowed to do op and answers
// with the envelope. A query parameter the route's entry in apiRoutes does
// not list, or one given twice, is refused before fn runs.
func (h *Handler) handle(method, path string, op projectdata.Operation, fn endpoint) {
	params := queryParams(method, path)
	h.register(method, path, h.guard(path, op, func(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) {
		status, data, err := 0, any(nil), knownQuery(r, params)
		if err == nil {
			status, data, err = fn(ctx, r, ps)
		}
		if ir, ok := r.Body.(*idempotentRequest); ok && err != nil && !ir.fingerprinted {
			// Refused before the Store ran the operation (its body, say):
			// the refusal is the key's answer all the same.
			err = h.store.RefuseIdempotent(ctx, ps.ByName("project"), op, err)
		}
		if err != nil {
			h.writeError(w, r, x, err)
		} else {
			h.writeData(w, x, status, data)
		}
		if buf, ok := data.(*bytes.Buffer); ok {
			h.putBody(buf)
		}
	}))
}

// handleStream registers a route that needs a token allowed to do op and
// writes its own body; its errors still answer with the envelope. Its query
// parameters are checked as handle's are.
func (h *Handler) handleStream(method, path string, op projectdata.Operation, fn streamEndpoint) {
	params := queryParams(method, path)
	h.register(method, path, h.guard(path, op, func(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) {
		err := knownQuery(r, params)
		if err == nil {
			err = fn(ctx, w, r, ps, x)
		}
		if err != nil {
			h.writeError(w, r, x, err)
		}
	}))
}

// knownQuery checks r's query parameters against the route's, without
// parsing an empty query (most requests). A query that does not parse (a
// bad %-escape, a ";") is refused: r.URL.Query() drops such pairs without
// a word, so a limit sent that way would become the default.
func knownQuery(r *http.Request, params []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return errorf(projectdata.ErrInvalidRequest, "the query string does not parse: %.100s; send name=value pairs joined by &, %%-encoded", err)
	}
	return knownParams(q, params...)
}

// register adds a route to the router and to the list the OpenAPI
// document is checked against; a GET route answers HEAD too.
func (h *Handler) register(method, path string, handle httprouter.Handle) {
	h.registered = append(h.registered, method+" "+path)
	h.router.Handle(method, path, handle)
	if method == http.MethodGet {
		// HEAD is GET without the content (RFC 9110, 9.3.2): net/http
		// drops what the handler writes. The router lists it in Allow.
		h.router.Handle(http.MethodHead, path, handle)
	}
}

// guard runs the checks every route shares, in the contract's order: route
// (the router did it), project, token, role, operation and idempotency
// headers; then serve handles the body and the operation, with the caller
// in the context it is given.
func (h *Handler) guard(route string, op projectdata.Operation, serve func(context.Context, http.ResponseWriter, *http.Request, httprouter.Params, *exchange)) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		noteRoute(w, route)
		unescapeParams(ps)
		x := newExchange(w, r, h)
		// One lookup of the project serves the token check and the
		// operation.
		ctx, release, err := h.store.Pin(r.Context(), ps.ByName("project"))
		defer release()
		if err == nil {
			ctx, err = h.authenticate(ctx, w, ps.ByName("project"), r.Header["Authorization"], op)
		}
		if err == nil {
			err = x.opHeaderErr
		}
		if share := h.bodyShare(r); err == nil && share > 0 {
			// Taken once the caller is known, before the body is read.
			var who tokenKey
			if who, err = h.bodyRoom.acquire(ctx, share, h.opts.BodyWait); err == nil {
				defer h.bodyRoom.release(who, share)
			}
		}
		if err == nil {
			var body io.ReadCloser
			ctx, body, err = h.withIdempotency(ctx, w, r)
			if body != nil {
				// A handler may not change the request it was given.
				r = r.WithContext(ctx)
				r.Body = body
			}
		}
		if err != nil {
			h.writeError(w, r, x, err)
			return
		}
		serve(ctx, w, r, ps, x)
	}
}

// authenticate checks the project, the bearer token of the request's
// Authorization headers and its role, and returns a context carrying the
// caller. The Store checks the project before the token, so an unknown
// project is project_not_found whatever the token. A request with more than
// one Authorization header has no token: a proxy in front that read
// another of them than this handler would authorize another caller.
func (h *Handler) authenticate(ctx context.Context, w http.ResponseWriter, slug string, authorization []string, op projectdata.Operation) (context.Context, error) {
	secret := ""
	if len(authorization) == 1 {
		if scheme, rest, ok := strings.Cut(authorization[0], " "); ok && strings.EqualFold(scheme, "Bearer") {
			secret = strings.TrimSpace(rest)
		}
	}
	caller, err := h.store.Authenticate(ctx, slug, secret)
	if projectdata.ErrorCode(err) == projectdata.ErrInvalidToken {
		w.Header().Set("WWW-Authenticate", `Bearer realm="projectdata"`)
		switch {
		case len(authorization) > 1:
			err = errorf(projectdata.ErrInvalidToken, "send one Authorization header, not %d", len(authorization))
		case secret == "":
			err = errorf(projectdata.ErrInvalidToken, "send a Project API Token as Authorization: Bearer pat_…")
		}
	}
	if err != nil {
		return nil, err
	}
	noteTokenID(w, caller.TokenID)
	if err := caller.Authorize(op); err != nil {
		return nil, err
	}
	return projectdata.WithCaller(ctx, caller), nil
}

func errorf(code projectdata.Code, format string, args ...any) error {
	return &projectdata.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
