package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/projectdata/projectdata"
)

// statusOf is the one map from error code to HTTP status (CONTRACT §8).
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

	projectdata.ErrQueryBudgetExceeded:  http.StatusUnprocessableEntity,
	projectdata.ErrIdempotencyKeyReused: http.StatusUnprocessableEntity,

	projectdata.ErrInternal:    http.StatusInternalServerError,
	projectdata.ErrStoreClosed: http.StatusServiceUnavailable,
	projectdata.ErrServerBusy:  http.StatusServiceUnavailable,
}

// envelope is the body of every JSON response.
type envelope struct {
	OK                      bool       `json:"ok"`
	Data                    any        `json:"data"`
	Error                   *errorBody `json:"error"`
	RequestID               string     `json:"request_id"`
	OperationKey            string     `json:"operation_key,omitempty"`
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
	if code == projectdata.ErrInternal {
		if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
			h.log.Info("request canceled", "request_id", x.requestID, "err", err)
		} else {
			h.log.Error("internal error", "request_id", x.requestID, "method", r.Method, "path", r.URL.Path, "err", err)
		}
		msg = "internal error; quote request_id " + x.requestID + " when reporting it"
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	h.writeEnvelope(w, x, status, envelope{Error: &errorBody{Code: code, Message: msg}})
}

func (h *Handler) writeEnvelope(w http.ResponseWriter, x *exchange, status int, env envelope) {
	env.RequestID = x.requestID
	env.OperationKey, env.OperationRunID, env.OperationGroupingStatus = x.opKey, x.opRunID, x.opGrouping
	env.Meta.GeneratedAt = projectdata.Timestamp{Time: h.opts.Now()}
	buf, _ := h.bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer h.putBody(buf)
	// Encode writes what json.Marshal makes, and a newline.
	if err := json.NewEncoder(buf).Encode(env); err != nil {
		h.log.Error("encode response", "request_id", x.requestID, "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		json.NewEncoder(buf).Encode(envelope{
			Error:     &errorBody{Code: projectdata.ErrInternal, Message: "internal error; quote request_id " + x.requestID + " when reporting it"},
			RequestID: x.requestID,
			Meta:      env.Meta,
		})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// maxPooledBody is the largest buffer kept for reuse: a rare large answer
// does not pin its memory.
const maxPooledBody = 64 << 10

// putBody gives a response buffer back for reuse.
func (h *Handler) putBody(b *bytes.Buffer) {
	if b.Cap() > maxPooledBody {
		return
	}
	b.Reset()
	h.bodies.Put(b)
}

// readBody reads a JSON request body within the size limit. It returns nil
// for an empty body; a body that is not JSON by its Content-Type is
// unsupported_media_type (a missing Content-Type is taken as JSON).
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errorf(projectdata.ErrPayloadTooLarge, "the request body exceeds %d bytes", h.opts.MaxBodyBytes)
		}
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, errorf(projectdata.ErrUnsupportedMediaType, "send the body as application/json")
		}
	}
	return body, nil
}

// decodeBody decodes a JSON body into v strictly: numbers stay exact
// (json.Number), unknown fields and trailing data are refused. An empty
// body leaves v as it is and reports false.
func (h *Handler) decodeBody(r *http.Request, v any) (bool, error) {
	body, err := h.readBody(r)
	if err != nil || body == nil {
		return false, err
	}
	return true, decodeJSON(body, v, true)
}

// decodeJSON decodes one JSON value; strict refuses unknown object fields.
func decodeJSON(body []byte, v any, strict bool) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if strict {
		d.DisallowUnknownFields()
	}
	if err := d.Decode(v); err != nil {
		return jsonError(err)
	}
	if d.More() {
		return errorf(projectdata.ErrInvalidJSON, "the body holds more than one JSON value")
	}
	if _, err := d.Token(); err != io.EOF {
		return errorf(projectdata.ErrInvalidJSON, "the body holds more than one JSON value")
	}
	return nil
}

// jsonError explains a decoding failure: bad syntax is invalid_json, a
// value of the wrong shape is invalid_request naming the field, and a
// Store error raised while decoding (a where clause) keeps its code.
func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		pdErr   *projectdata.Error
	)
	switch {
	case errors.As(err, &pdErr):
		return pdErr
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errorf(projectdata.ErrInvalidJSON, "the body is not valid JSON")
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return errorf(projectdata.ErrInvalidRequest, "field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return errorf(projectdata.ErrInvalidRequest, "the body must be %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(projectdata.ErrInvalidRequest, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errorf(projectdata.ErrInvalidJSON, "the body is not valid JSON")
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "another kind of value"
}
