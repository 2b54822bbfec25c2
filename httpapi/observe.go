package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/projectdata/projectdata"
)

// Metrics receives what the Handler observes of every request, and serves
// GET /metrics (no token) when set as Options.Metrics. Package prommetrics
// implements it for Prometheus; httpapi itself depends on no metrics
// library. Implementations must be safe for concurrent use.
type Metrics interface {
	// ObserveRequest is called once for every request, after its response
	// has been written.
	ObserveRequest(RequestObservation)
	// ServeHTTP serves GET /metrics.
	http.Handler
}

// RequestObservation is what the Handler observed of one request. It names
// the route by its pattern and so carries no project slug, token or table
// name.
type RequestObservation struct {
	// Method is the request's method, as the client sent it.
	Method string
	// Route is the pattern of the route that served the request, such as
	// "/projects/:project/records/:table"; "" when no route did
	// (route_not_found, method_not_allowed, OPTIONS).
	Route string
	// Status is the response's status.
	Status int
	// Code is the error code of an error response; "" on success.
	Code projectdata.Code
	// Duration is the time from the request's arrival to the end of its
	// response.
	Duration time.Duration
}

// observe writes the access log line of a served request and reports it
// to Options.Metrics.
func (h *Handler) observe(rec *statusRecorder, r *http.Request, d time.Duration) {
	if h.opts.Metrics != nil {
		h.opts.Metrics.ObserveRequest(RequestObservation{
			Method:   r.Method,
			Route:    rec.route,
			Status:   rec.status,
			Code:     rec.code,
			Duration: d,
		})
	}
	if !h.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", rec.status),
		slog.Int64("bytes", rec.bytes),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	)
	if id := rec.Header().Get("X-Request-Id"); id != "" { // none for /metrics and /openapi.json
		attrs = append(attrs, slog.String("request_id", id))
	}
	if rec.code != "" {
		attrs = append(attrs, slog.String("code", string(rec.code)))
	}
	if rec.tokenID != 0 {
		attrs = append(attrs, slog.Int64("token_id", rec.tokenID))
	}
	if rec.busy != "" {
		attrs = append(attrs, slog.String("busy", rec.busy))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// noteRoute, noteCode, noteBusy and noteTokenID tell the access log and the metrics
// what the router and the handlers learned of the request; w is the
// Handler's own statusRecorder.
func noteRoute(w http.ResponseWriter, route string) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.route = route
	}
}

func noteCode(w http.ResponseWriter, code projectdata.Code) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.code = code
	}
}

func noteBusy(w http.ResponseWriter, why string) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.busy = why
	}
}

func noteTokenID(w http.ResponseWriter, id int64) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.tokenID = id
	}
}

// noteAborted tells ServeHTTP that the answer failed after it had started:
// it aborts the response once the request is logged and observed.
func noteAborted(w http.ResponseWriter) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.aborted = true
	}
}
