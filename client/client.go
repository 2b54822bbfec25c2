// Package client is the Go client of the projectdata HTTP API (package
// httpapi): the Store's operations over HTTP, with the same names,
// signatures (context first) and errors. An error the server answers is a
// *projectdata.Error with the server's code, so
//
//	errors.Is(err, projectdata.ErrTableNotFound)
//
// holds over HTTP as it does in process. An answer without an envelope (a
// proxy's page, an empty body) is the error of its HTTP status: 401
// ErrInvalidToken, 403 ErrPermissionDenied, 404 the operation's not-found
// code (a record's, an export's) or else ErrRouteNotFound, 413
// ErrPayloadTooLarge, 503 ErrServerBusy, 507 ErrExportQuotaExceeded, any
// other ErrInternal; an answer is a success only with a 2xx status.
//
// Reads and writes are retried, at most Options.MaxRetries times, on
// network errors (an answer cut while it is read included) and on 503
// answers (waiting as Retry-After says); a write also when a retry finds
// its first attempt still running (409 idempotency_key_in_flight). A
// write is retried under one Idempotency-Key, so that a write the server
// did apply is answered again rather than done twice. That key is the one ctx carries (projectdata.WithIdempotency), if
// any, so that a caller's own retries are applied once too, as with the
// Store; an Idempotency's OnReplay is called when the server answers
// Idempotent-Replayed: true, which after a retry of the client's own may
// be the answer to its own first attempt (HTTP cannot tell them apart).
// Its Fingerprint is not sent: the server fingerprints the request's
// method, path and body.
//
// The change feed is an iterator (FollowChanges) that, like the Store's,
// lasts until ctx ends: a stream that ends or breaks is opened again
// where it stopped. Export downloads stream to an io.Writer
// (DownloadExport, in place of OpenExport). The
// Store's methods that serve the server itself (Authenticate, Pin, Stats,
// the Append*JSON encoders, DecodeRows, RefuseIdempotent), manage its
// projects (CreateProject, ListProjects, RestoreProject) or its lifetime
// (Close, Closed) have no counterpart here. LastChangeID reads the start
// of a change stream, which no other route answers.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"

	pd "github.com/projectdata/projectdata"
)

// Options configures a Client. A nil *Options, and the zero value of every
// field, means the default.
type Options struct {
	// HTTPClient sends the requests: a copy of it that follows no
	// redirect (see New). Zero: http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is how many times a read or a write (under its
	// Idempotency-Key) is sent again after a network error or a 503
	// answer. Token creation, which takes no key, is never sent again.
	// Zero: 3; negative: never.
	MaxRetries int
	// MaxRetryWait caps the wait before a retry, whatever Retry-After
	// says. Zero: 5 s.
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds the body of an answer the client holds in
	// memory, and each event of the change feed; a longer one is
	// ErrResponseTooLarge. Export downloads, which stream, are not
	// bounded. Zero: 64 MiB, 16 times the server's default result budget
	// (httpapi answers with rows stop near it) and 8 times its default
	// body limit, room for a server whose limits were raised, while a
	// broken or hostile server cannot make the client hold more.
	MaxResponseBytes int64
}

// ErrResponseTooLarge is returned, wrapped, for an answer whose body is
// longer than Options.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the answer is larger than Options.MaxResponseBytes")

// Client calls one server with one token. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
	opts  Options
}

// New returns a client of the server at baseURL (such as
// "http://127.0.0.1:8080", including the prefix the API is mounted under,
// if any) using token for every request.
//
// The client follows no redirect: net/http would send a POST, PATCH or
// DELETE that meets a 301, 302 or 303 again as a GET without its body, and
// a write would seem to succeed that never happened. A redirect is an
// error naming its Location; give New the URL it points to.
func New(baseURL, token string, opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	hc := http.Client{}
	if o.HTTPClient != nil {
		hc = *o.HTTPClient // a copy: the caller's client keeps its own policy
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.HTTPClient = &hc
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 3
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = 5 * time.Second
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 64 << 20
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: o.HTTPClient, opts: o}
}

// request is one call: method, path (escaped by the caller), query, body.
type request struct {
	method, path string
	query        url.Values
	body         any     // encoded as JSON; nil: rawBody
	rawBody      []byte  // sent as is; nil: no body
	idempotent   bool    // a write whose answer the server stores under an Idempotency-Key: retried under one key
	sendKey      bool    // not idempotent, but sends ctx's key (token creation: the server refuses it as the Store does)
	read         bool    // a read sent with POST (Query): safe to send again, as a GET is
	stream       bool    // the 200 answer is a stream, read by the caller (see send)
	accept       string  // the Accept header, if any
	lastEventID  string  // the Last-Event-ID header, if any
	notFound     pd.Code // the code of a 404 answer without an envelope; "": route_not_found
}

// envelope is the answer of every JSON route.
type envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error *errorBody      `json:"error"`
}

// errorBody is an error as the server writes it.
type errorBody struct {
	Code    pd.Code `json:"code"`
	Message string  `json:"message"`
}

// do sends req and decodes the envelope's data into out (when not nil).
func (c *Client) do(ctx context.Context, req request, out any) error {
	res, data, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	return decodeEnvelope(res, data, req, out)
}

// drainLimit bounds what closeBody reads of a body's rest.
const drainLimit = 256 << 10

// closeBody reads what is left of a response body, up to drainLimit, and
// closes it: net/http reuses a connection only after its body was read to
// the end (a longer rest costs the connection, not the time to read it).
func closeBody(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	body.Close()
}

// send sends req and returns the answer of its last attempt: the 200
// answer of a stream with its body open; any other answer with its body
// read whole into data (and closed), as part of the attempt.
//
// A read, or an idempotent write under the same Idempotency-Key and body,
// is sent again at most Options.MaxRetries times and while ctx lasts, when
// its attempt failed on the network (before the answer or while reading
// it: the server may have applied a write; its key answers the retry with
// the first answer) or the server answered 503 (after Retry-After); a
// write also when, sent before, it found its first attempt still running
// (409 idempotency_key_in_flight).
func (c *Client) send(ctx context.Context, req request) (*http.Response, []byte, error) {
	if err := emptyName(req.path); err != nil {
		return nil, nil, err
	}
	body := req.rawBody
	if req.body != nil {
		var err error
		if body, err = encodeJSON(req.body); err != nil {
			return nil, nil, &pd.Error{Code: pd.ErrInvalidRequest, Message: "encode the request: " + err.Error()}
		}
	}
	u := c.base + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	retries := 0
	key := ""
	idem, keyed := pd.IdempotencyFrom(ctx)
	keyed = keyed && (req.idempotent || req.sendKey) // reads ignore a key, as the Store's do
	switch {
	case keyed:
		var err error
		if key, err = idempotencyHeader(idem.Key); err != nil {
			return nil, nil, err
		}
	case req.idempotent:
		key, _ = idempotencyHeader(newIdempotencyKey())
	}
	if req.idempotent || req.read || req.method == http.MethodGet {
		retries = c.opts.MaxRetries
	}
	// A 409 idempotency_key_in_flight is this call's own first attempt
	// still running once the request was written more than once: by a
	// retry, or by the Transport, which sends a request with an
	// Idempotency-Key again itself when a kept-alive connection fails.
	var written atomic.Int32
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { written.Add(1) }})
	for attempt := 0; ; attempt++ {
		res, data, err := c.attempt(ctx, req, u, body, key)
		retryAfter := ""
		switch {
		case err != nil && (ctx.Err() != nil || errors.Is(err, ErrResponseTooLarge)):
			return nil, nil, err
		case err != nil:
			if attempt >= retries {
				return nil, nil, err
			}
		case attempt < retries && res.StatusCode == http.StatusServiceUnavailable:
			retryAfter = res.Header.Get("Retry-After")
		case attempt < retries && written.Load() > 1 && res.StatusCode == http.StatusConflict && errorCode(data) == pd.ErrIdempotencyKeyInFlight:
		default:
			if keyed && idem.OnReplay != nil && res.Header.Get("Idempotent-Replayed") == "true" {
				idem.OnReplay()
			}
			return res, data, nil
		}
		if !c.pause(ctx, attempt, retryAfter) {
			return nil, nil, ctx.Err()
		}
	}
}

// pause waits before the try after the failed try n (from 0): as long as
// retryAfter (a Retry-After header) says, if it says more than 0, else
// 100 ms more for each try so far; at most Options.MaxRetryWait. It
// returns false if ctx ends first.
func (c *Client) pause(ctx context.Context, n int, retryAfter string) bool {
	wait := retryAfterWait(retryAfter, c.opts.MaxRetryWait)
	if wait == 0 {
		wait = time.Duration(n+1) * 100 * time.Millisecond
	}
	t := time.NewTimer(min(wait, c.opts.MaxRetryWait))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// attempt sends one request and, unless its answer is a stream's 200,
// reads the answer's body whole.
func (c *Client) attempt(ctx context.Context, req request, u string, body []byte, key string) (*http.Response, []byte, error) {
	hr, err := http.NewRequestWithContext(ctx, req.method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, errors.Wrapf(err, "projectdata client: %s %s", req.method, req.path)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	if req.lastEventID != "" {
		hr.Header.Set("Last-Event-ID", req.lastEventID)
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	if key != "" {
		hr.Header.Set("Idempotency-Key", key)
	}
	res, err := c.http.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, errors.Wrapf(err, "projectdata client: %s %s", req.method, req.path)
	}
	if req.stream && res.StatusCode == http.StatusOK {
		return res, nil, nil
	}
	defer res.Body.Close()
	data, err := readAtMost(res.Body, c.opts.MaxResponseBytes)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "projectdata client: %s %s: read the answer (%s)", req.method, req.path, res.Status)
	}
	return res, data, nil
}

// readAtMost reads r to its end, or fails with ErrResponseTooLarge past
// limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, errors.Wrapf(ErrResponseTooLarge, "stopped after %d bytes", limit)
	}
	return data, err
}

// encodeJSON encodes v as JSON, with <, > and & as they are: json.Marshal
// writes each as a 6-byte escape, so that a body of such text, which the
// Store takes, could pass the server's body limit.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// errorCode returns the code of an error envelope, "" for anything else.
func errorCode(data []byte) pd.Code {
	var env envelope
	if json.Unmarshal(data, &env) != nil || env.Error == nil {
		return ""
	}
	return env.Error.Code
}

// retryAfterWait reads a Retry-After header in seconds or as an HTTP
// date, at most limit (anything else is limit); 0 when v is empty.
func retryAfterWait(v string, limit time.Duration) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, limit)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), limit)
	}
	return limit
}

// decodeEnvelope decodes an answer, its body data, to req: the envelope's
// data into out, or its error as a *projectdata.Error. Only a 2xx status
// with ok true is a success. An answer without an envelope (a proxy's
// page, an empty body), or whose envelope contradicts its status, is the
// error of its status (see statusCode).
func decodeEnvelope(res *http.Response, data []byte, req request, out any) error {
	var env envelope
	err := json.Unmarshal(data, &env)
	success := res.StatusCode >= 200 && res.StatusCode < 300
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return errors.Errorf("projectdata client: %s %s: the server answered %s, a redirect to %q, which the client does not follow (see New)", req.method, req.path, res.Status, res.Header.Get("Location"))
	case err == nil && !env.OK && env.Error != nil && env.Error.Code != "":
		return &pd.Error{Code: env.Error.Code, Message: env.Error.Message}
	case !success:
		return &pd.Error{Code: statusCode(res.StatusCode, req), Message: fmt.Sprintf("the server answered %s without an error envelope", res.Status)}
	case err != nil:
		return errors.Wrapf(err, "projectdata client: %s %s: the server answered %s without a JSON envelope", req.method, req.path, res.Status)
	case !env.OK:
		return &pd.Error{Code: pd.ErrInternal, Message: "the server answered " + res.Status + " without data or an error"}
	case out == nil:
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(env.Data))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return errors.Wrapf(err, "projectdata client: %s %s: decode the answer", req.method, req.path)
	}
	return nil
}

// statusCode is the code of an answer's status when the answer has no
// envelope to say it: the one code the contract gives the status (§8,
// §16), or else the one closest to it. A 404 is the operation's own
// not-found code when it names one (req.notFound).
func statusCode(status int, req request) pd.Code {
	switch {
	case status == http.StatusBadRequest:
		return pd.ErrInvalidRequest
	case status == http.StatusUnauthorized:
		return pd.ErrInvalidToken
	case status == http.StatusForbidden:
		return pd.ErrPermissionDenied
	case status == http.StatusNotFound && req.notFound != "":
		return req.notFound
	case status == http.StatusNotFound:
		return pd.ErrRouteNotFound
	case status == http.StatusMethodNotAllowed:
		return pd.ErrMethodNotAllowed
	case status == http.StatusRequestEntityTooLarge:
		return pd.ErrPayloadTooLarge
	case status == http.StatusUnsupportedMediaType:
		return pd.ErrUnsupportedMediaType
	case status == http.StatusServiceUnavailable:
		return pd.ErrServerBusy
	case status == http.StatusInsufficientStorage:
		return pd.ErrExportQuotaExceeded
	}
	return pd.ErrInternal
}

// idempotencyHeader returns key as an Idempotency-Key header value: a
// quoted structured-field string, which the server reads back as key
// exactly (read bare, a key would lose surrounding spaces or a leading
// quote). A key the Store refuses is ErrInvalidIdempotencyKey, before any
// request.
func idempotencyHeader(key string) (string, error) {
	v := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
	if _, err := pd.ParseIdempotencyKey(v); err != nil {
		return "", err
	}
	return v, nil
}

// newIdempotencyKey returns a new key for one write and its retries: the
// time in milliseconds (48 bits), then 80 random bits, in hex, as a UUIDv7
// orders them. The server indexes stored answers by key: a key that grows
// with time lands at the end of that index, where the writes before it
// left the page, while a random one lands on a page of its own, which the
// write must then copy to the log and back (in process, single-row inserts
// with random keys ran at 0.38 of their rate without a key, against 0.62
// with keys in order).
func newIdempotencyKey() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	rand.Read(b[6:])
	return "pdc-" + hex.EncodeToString(b[:])
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// project is the path of a project's route.
func project(slug string, parts ...string) string {
	p := "/projects/" + seg(slug)
	for _, s := range parts {
		p += "/" + s
	}
	return p
}

// emptyName is the Store's answer, without a request, to a path that
// names no table, column or index: a name that is empty, which no path
// carries (the server would answer route_not_found, a route it does not
// have). A column's or an index's table is named as the caller gave it.
func emptyName(path string) error {
	if !strings.Contains(path, "//") && !strings.HasSuffix(path, "/") {
		return nil // every segment has a name: most paths
	}
	parts := strings.Split(path, "/") // "", "projects", slug, route, table, …
	if len(parts) < 5 {
		return nil
	}
	switch parts[3] {
	case "table", "column", "records", "indexes":
	default:
		return nil
	}
	if parts[4] == "" {
		return &pd.Error{Code: pd.ErrTableNotFound, Message: `table "" does not exist`}
	}
	if len(parts) != 6 || parts[5] != "" {
		return nil
	}
	table, _ := url.PathUnescape(parts[4])
	switch parts[3] {
	case "column":
		return &pd.Error{Code: pd.ErrColumnNotFound, Message: fmt.Sprintf(`column "" does not exist in table %q`, table)}
	case "indexes":
		return &pd.Error{Code: pd.ErrIndexNotFound, Message: fmt.Sprintf(`table %q has no index named ""`, table)}
	}
	return nil
}

// recordPath is the path of the row of table whose primary key is id:
// the key's string form, which the Store reads as it reads id (GetRecord
// takes 5 or "5"). An id that no path carries is ErrRecordNotFound, as the
// Store answers it, without a request: nil (NULL is no key), a
// non-finite number, a value of no scalar kind (a slice, a map, a
// struct), and "" (a path has no empty segment: a row whose key is the
// empty string cannot be named over HTTP).
func recordPath(slug, table string, id any) (string, error) {
	s, ok := idString(id)
	if !ok || s == "" {
		shown := "of an unsupported kind"
		switch {
		case id == nil:
			shown = "NULL"
		case ok:
			shown = `"" (the HTTP API has no path for an empty key)`
		}
		return "", &pd.Error{Code: pd.ErrRecordNotFound, Message: fmt.Sprintf("no record with id %s in table %q", shown, table)}
	}
	return project(slug, "records", seg(table), seg(s)), nil
}

// idString is the string form of a record id, as the Store converts the
// id to a TEXT key; ok is false for an id of no scalar kind.
func idString(id any) (s string, ok bool) {
	switch v := id.(type) {
	case nil:
		return "", false
	case json.Number:
		return v.String(), true
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano), true
	}
	v := reflect.ValueOf(id)
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
	}
	return "", false
}
