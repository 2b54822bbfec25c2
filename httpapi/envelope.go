package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/projectdata/projectdata"
)

// statusOf is the one map from error code to HTTP status: one status per code.
var statusOf = map[projectdata.Code]int{
	projectdata.ErrInvalidJSON:             http.StatusBadRequest,
	projectdata.ErrInvalidProjectName:      http.StatusBadRequest,
	projectdata.ErrInvalidProjectSlug:      http.StatusBadRequest,
	projectdata.ErrInvalidTableName:        http.StatusBadRequest,
	projectdata.ErrInvalidColumnName:       http.StatusBadRequest,
	projectdata.ErrInvalidColumnType:       http.StatusBadRequest,
	projectdata.ErrInvalidColumnValue:      http.StatusBadRequest,
	projectdata.ErrInvalidColumnChange:     http.StatusBadRequest,
	projectdata.ErrUnsupportedColumnChange: http.StatusBadRequest,
	projectdata.ErrInvalidWhere:            http.StatusBadRequest,
	projectdata.ErrWhereRequired:           http.StatusBadRequest,
	projectdata.ErrWriteSQLForbidden:       http.StatusBadRequest,
	projectdata.ErrInvalidExportStatus:     http.StatusBadRequest,
	projectdata.ErrInvalidExportFormat:     http.StatusBadRequest,
	projectdata.ErrInvalidTokenType:        http.StatusBadRequest,
	projectdata.ErrInvalidExpiresAt:        http.StatusBadRequest,
	projectdata.ErrInvalidOperationRunID:   http.StatusBadRequest,
	projectdata.ErrInvalidRequest:          http.StatusBadRequest,
	projectdata.ErrInvalidCursor:           http.StatusBadRequest,
	projectdata.ErrInvalidIdempotencyKey:   http.StatusBadRequest,
	projectdata.ErrNotNullViolation:        http.StatusBadRequest,

	projectdata.ErrInvalidToken: http.StatusUnauthorized,

	projectdata.ErrPermissionDenied: http.StatusForbidden,
	projectdata.ErrForbidden:        http.StatusForbidden,
	projectdata.ErrQueryTableDenied: http.StatusForbidden,

	projectdata.ErrProjectNotFound: http.StatusNotFound,
	projectdata.ErrTableNotFound:   http.StatusNotFound,
	projectdata.ErrColumnNotFound:  http.StatusNotFound,
	projectdata.ErrRecordNotFound:  http.StatusNotFound,
	projectdata.ErrIndexNotFound:   http.StatusNotFound,
	projectdata.ErrExportNotFound:  http.StatusNotFound,
	projectdata.ErrRouteNotFound:   http.StatusNotFound,
	projectdata.ErrTokenNotFound:   http.StatusNotFound,

	projectdata.ErrMethodNotAllowed: http.StatusMethodNotAllowed,

	projectdata.ErrTableExists:            http.StatusConflict,
	projectdata.ErrColumnExists:           http.StatusConflict,
	projectdata.ErrIndexExists:            http.StatusConflict,
	projectdata.ErrIndexNotManaged:        http.StatusConflict,
	projectdata.ErrColumnTypeLocked:       http.StatusConflict,
	projectdata.ErrUniqueViolation:        http.StatusConflict,
	projectdata.ErrProjectExists:          http.StatusConflict,
	projectdata.ErrIdempotencyKeyInFlight: http.StatusConflict,

	projectdata.ErrChangesExpired: http.StatusGone,

	projectdata.ErrQueryResultTooLarge: http.StatusRequestEntityTooLarge,
	projectdata.ErrPayloadTooLarge:     http.StatusRequestEntityTooLarge,
	projectdata.ErrTooManyRows:         http.StatusRequestEntityTooLarge,

	projectdata.ErrUnsupportedMediaType: http.StatusUnsupportedMediaType,

	projectdata.ErrRangeNotSatisfiable: http.StatusRequestedRangeNotSatisfiable,

	projectdata.ErrQueryBudgetExceeded:  http.StatusUnprocessableEntity,
	projectdata.ErrIdempotencyKeyReused: http.StatusUnprocessableEntity,

	projectdata.ErrInternal:    http.StatusInternalServerError,
	projectdata.ErrStoreClosed: http.StatusServiceUnavailable,
	projectdata.ErrServerBusy:  http.StatusServiceUnavailable,

	projectdata.ErrExportQuotaExceeded: http.StatusInsufficientStorage,
}

// envelope is the body of every JSON response.
type envelope struct {
	OK                      bool       `json:"ok"`
	Data                    any        `json:"data"`
	Error                   *errorBody `json:"error"`
	RequestID               string     `json:"request_id"`
	OperationKey            *string    `json:"operation_key,omitempty"` // with operation_run_id, "" when no key was sent
	OperationRunID          string     `json:"operation_run_id,omitempty"`
	OperationGroupingStatus string     `json:"operation_grouping_status,omitempty"`
	Meta                    meta       `json:"meta"`
}

type errorBody struct {
	Code    projectdata.Code `json:"code"`
	Message string           `json:"message"`
}

type meta struct {
	GeneratedAt projectdata.Timestamp `json:"generated_at"`
}

// writeData writes a success envelope.
func (h *Handler) writeData(w http.ResponseWriter, x *exchange, status int, data any) {
	h.writeEnvelope(w, x, status, envelope{OK: true, Data: data})
}

// writeError is the one error writer: it maps the error's code to its
// status and writes the error envelope. Internal errors are logged with the
// request id and answered without their details.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, x *exchange, err error) {
	code := projectdata.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		code, status = projectdata.ErrInternal, http.StatusInternalServerError
	}
	msg := err.Error()
	gone := r.Context().Err() != nil && errors.Is(err, r.Context().Err()) // the client went away meanwhile
	if errors.Is(err, errClientAborted) || (gone && code == projectdata.ErrInternal) {
		// The client's doing, not the service's (CONTRACT §10): logged and
		// counted as such; the answer reaches no one.
		h.log.Info("client_aborted", "request_id", x.requestID, "method", r.Method, "path", r.URL.Path)
		code, status, msg = projectdata.ErrInvalidRequest, http.StatusBadRequest, "the request ended before it was complete"
	} else if code == projectdata.ErrInternal {
		h.log.Error("internal error", "request_id", x.requestID, "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; quote request_id " + x.requestID + " when reporting it"
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
		// Which bound or queue refused it (readers, writer, bodies,
		// downloads, streams, SQLite's heap, a lock another process holds)
		// is in its message, which holds no data of the request's.
		noteBusy(w, msg)
	}
	noteCode(w, code)
	h.writeEnvelope(w, x, status, envelope{Error: &errorBody{Code: code, Message: msg}})
}

func (h *Handler) writeEnvelope(w http.ResponseWriter, x *exchange, status int, env envelope) {
	h.stamp(x, &env)
	buf := h.getBody()
	defer h.putBody(buf)
	if err := appendEnvelope(buf, &env); err != nil {
		h.log.Error("encode response", "request_id", x.requestID, "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		json.NewEncoder(buf).Encode(envelope{
			Error:     &errorBody{Code: projectdata.ErrInternal, Message: "internal error; quote request_id " + x.requestID + " when reporting it"},
			RequestID: x.requestID,
			Meta:      env.Meta,
		})
	}
	setHeader(w, "Content-Type", &x.contentTypeHeader, "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// stamp sets what every envelope carries besides its data or error: the
// request id, the operation fields when sent, and meta.
func (h *Handler) stamp(x *exchange, env *envelope) {
	env.RequestID = x.requestID
	if x.opRunID != "" {
		// The operation headers were sent: the three fields are echoed,
		// the key as "" when only X-Operation-Run-Id was sent.
		env.OperationKey = &x.opKey
		env.OperationRunID, env.OperationGroupingStatus = x.opRunID, x.opGrouping
	}
	env.Meta.GeneratedAt = projectdata.Timestamp{Time: h.opts.Now()}
}

// appendEnvelope writes env as json.NewEncoder(buf).Encode(env) would (the
// bytes of json.Marshal and a newline) without reflecting over the
// envelope: data that is a *bytes.Buffer (JSON the Store appended, a
// record read straight from SQLite: compact, HTML-escaped, as
// encoding/json writes it) is copied as it is, other data is encoded by
// encoding/json.
func appendEnvelope(buf *bytes.Buffer, env *envelope) error {
	buf.WriteString(`{"ok":`)
	buf.WriteString(strconv.FormatBool(env.OK))
	buf.WriteString(`,"data":`)
	if err := appendJSON(buf, env.Data); err != nil {
		return err
	}
	return appendEnvelopeEnd(buf, env)
}

// appendEnvelopeEnd writes what follows an envelope's data: from its error
// to its end.
func appendEnvelopeEnd(buf *bytes.Buffer, env *envelope) error {
	buf.WriteString(`,"error":`)
	if env.Error == nil {
		buf.WriteString("null")
	} else if err := appendJSON(buf, env.Error); err != nil {
		return err
	}
	buf.WriteString(`,"request_id":`)
	if err := appendJSONString(buf, env.RequestID); err != nil {
		return err
	}
	if env.OperationKey != nil {
		buf.WriteString(`,"operation_key":`)
		if err := appendJSONString(buf, *env.OperationKey); err != nil {
			return err
		}
	}
	for _, f := range [...]struct{ name, value string }{ // omitempty
		{`,"operation_run_id":`, env.OperationRunID},
		{`,"operation_grouping_status":`, env.OperationGroupingStatus},
	} {
		if f.value != "" {
			buf.WriteString(f.name)
			if err := appendJSONString(buf, f.value); err != nil {
				return err
			}
		}
	}
	buf.WriteString(`,"meta":{"generated_at":`)
	buf.Write(env.Meta.GeneratedAt.AppendJSON(buf.AvailableBuffer()))
	buf.WriteString("}}\n")
	return nil
}

// appendJSON writes v as json.Marshal would.
func appendJSON(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
		return nil
	case *bytes.Buffer: // JSON the Store appended (see Handler.getBody)
		buf.Write(v.Bytes())
		return nil
	case string:
		if isPlainJSON(v) {
			appendPlainString(buf, v)
			return nil
		}
	}
	n := buf.Len()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		buf.Truncate(n)
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// appendJSONString is appendJSON of a string, which it boxes only when
// the string needs escaping.
func appendJSONString(buf *bytes.Buffer, s string) error {
	if isPlainJSON(s) {
		appendPlainString(buf, s)
		return nil
	}
	return appendJSON(buf, s)
}

// appendPlainString writes s, which needs no escaping, as a JSON string.
func appendPlainString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

// isPlainJSON reports whether s needs no escaping in a JSON string (as
// encoding/json escapes: control characters, quotes, backslashes, <, >, &
// and anything not ASCII are left to it).
func isPlainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x80 || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
			return false
		}
	}
	return true
}

// maxPooledBody is the largest buffer kept for reuse: a rare large answer
// does not pin its memory.
const maxPooledBody = 64 << 10

// getBody returns an empty pooled buffer for a response, or for an
// answer's data as JSON that the Store appends (a record read straight
// from SQLite's columns, say: the bytes encoding/json would write). An
// endpoint returns the latter as its data: the envelope copies it, and
// handle gives it back. It is filled with Go's idiom for appending to a
// buffer: buf.Write(appendX(buf.AvailableBuffer(), ...)).
func (h *Handler) getBody() *bytes.Buffer {
	if buf, _ := h.bodies.Get().(*bytes.Buffer); buf != nil {
		return buf
	}
	return new(bytes.Buffer)
}

// putBody gives a response buffer back for reuse.
func (h *Handler) putBody(b *bytes.Buffer) {
	if b.Cap() > maxPooledBody {
		return
	}
	b.Reset()
	h.bodies.Put(b)
}

// body returns the request body as a stream bounded by MaxBodyBytes: a
// body past the limit reads as payload_too_large, and one the client
// abandons as errClientAborted. A body that is not JSON by its
// Content-Type is unsupported_media_type (a missing Content-Type is taken
// as JSON), unless it is empty; so is JSON declared in a charset other
// than UTF-8, which the body is read as (RFC 8259, 8.1), and a body in a
// content coding (gzip, say), which is not decoded (RFC 9110, 8.4.1).
func (h *Handler) body(r *http.Request) (io.Reader, error) {
	br := &bodyReader{r: http.MaxBytesReader(nil, r.Body, h.opts.MaxBodyBytes), limit: h.opts.MaxBodyBytes}
	for _, ce := range r.Header.Values("Content-Encoding") {
		if ce != "" && !strings.EqualFold(strings.TrimSpace(ce), "identity") && r.ContentLength != 0 {
			return nil, errorf(projectdata.ErrUnsupportedMediaType, "send the body without a content coding, not %.40q", ce)
		}
	}
	// The usual type needs no parsing (ParseMediaType makes a map).
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, params, err := mime.ParseMediaType(ct)
		charset, hasCharset := params["charset"]
		switch {
		case r.ContentLength == 0:
		case err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")):
			return nil, errorf(projectdata.ErrUnsupportedMediaType, "send the body as application/json")
		case hasCharset && !strings.EqualFold(charset, "utf-8") && !strings.EqualFold(charset, "utf8"):
			return nil, errorf(projectdata.ErrUnsupportedMediaType, "send the body as application/json in UTF-8, not charset %.40q", charset)
		}
	}
	return br, nil
}

// decodeBody decodes a JSON body into v as a stream (projectdata.DecodeJSON):
// numbers stay exact, unknown fields and trailing data are refused, and a
// body too large is refused as soon as it is known. An empty body leaves v
// as it is and reports false.
func (h *Handler) decodeBody(r *http.Request, v any) (bool, error) {
	body, err := h.body(r)
	if err != nil {
		return false, err
	}
	return projectdata.DecodeJSON(body, v)
}

// errClientAborted is a request body the client stopped sending.
var errClientAborted = errors.New("client_aborted: the client stopped sending the request body")

// bodyReader reads a request body, telling its size limit and a client
// that went away apart from other failures.
type bodyReader struct {
	r     io.Reader
	limit int64
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return n, errorf(projectdata.ErrPayloadTooLarge, "the request body exceeds %d bytes", b.limit)
	}
	return n, errClientAborted
}

// streamChunk is how much of a streamed envelope is buffered before it is
// written: errors until then still answer with the error envelope.
const streamChunk = 32 << 10

// dataStream writes a success envelope whose data is appended to buf as it
// is read, streamChunk at a time, so that an answer of any size takes one
// chunk of memory. Its errors answer with the error envelope while nothing
// has been written; once the answer has started, the response is aborted
// instead (see fail). Each chunk is written under a deadline of its own
// (see writeDeadline).
type dataStream struct {
	h       *Handler
	w       http.ResponseWriter
	x       *exchange
	wd      writeDeadline
	buf     *bytes.Buffer // the data appended and not yet written
	started bool          // the status and some of the body are written
	failed  bool          // a write failed: the client is gone
}

// streamData starts a success envelope; append its data to d.buf, call
// d.flush as it grows, then d.end. Call d.close once done.
func (h *Handler) streamData(w http.ResponseWriter, x *exchange) *dataStream {
	d := &dataStream{h: h, w: w, x: x, wd: h.chunkDeadline(w), buf: h.getBody()}
	d.buf.WriteString(`{"ok":true,"data":`)
	return d
}

// flush writes what is buffered once it holds streamChunk, or with all
// set; false when the client is gone (stop reading then).
func (d *dataStream) flush(all bool) bool {
	if d.failed {
		return false
	}
	if d.buf.Len() < streamChunk && !all {
		return true
	}
	if !d.started {
		setHeader(d.w, "Content-Type", &d.x.contentTypeHeader, "application/json; charset=utf-8")
		d.w.WriteHeader(http.StatusOK)
		d.started = true
	}
	d.wd.extend()
	if _, err := d.w.Write(d.buf.Bytes()); err != nil {
		d.failed = true
		return false
	}
	d.buf.Reset()
	return true
}

// end appends the rest of the envelope after the data and writes it all.
func (d *dataStream) end() error {
	var env envelope
	d.h.stamp(d.x, &env)
	if err := appendEnvelopeEnd(d.buf, &env); err != nil {
		return err
	}
	d.flush(true)
	return nil
}

// fail ends the answer with err, if not nil. Before the answer started it
// returns err, for the route to answer with the error envelope. After, it
// logs err, has the response aborted (noteAborted) and returns nil: an
// error envelope appended to a partial answer, or a partial answer ended
// early, could read as a short list that looks complete. A client that
// went away is logged as client_aborted, as writeError logs it.
func (d *dataStream) fail(r *http.Request, err error) error {
	if err == nil || !d.started {
		return err
	}
	code := projectdata.ErrorCode(err)
	switch {
	case r.Context().Err() != nil:
		d.h.log.Info("client_aborted", "request_id", d.x.requestID, "method", r.Method, "path", r.URL.Path)
		code = projectdata.ErrInvalidRequest
	case code == projectdata.ErrInternal:
		d.h.log.Error("answer aborted after it started", "request_id", d.x.requestID, "method", r.Method, "path", r.URL.Path, "err", err)
	default:
		d.h.log.Warn("answer aborted after it started", "request_id", d.x.requestID, "method", r.Method, "path", r.URL.Path, "code", string(code), "err", err)
	}
	noteCode(d.w, code)
	noteAborted(d.w)
	return nil
}

// close gives the buffer back.
func (d *dataStream) close() { d.h.putBody(d.buf) }
