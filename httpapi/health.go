package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/projectdata/projectdata"
)

// Routes of the operations side, served without a token.
const (
	healthRoute  = "/healthz"
	metricsRoute = "/metrics"
)

// operationsRoutes registers GET /healthz, GET /openapi.json, and GET
// /metrics when Options.Metrics is set.
func (h *Handler) operationsRoutes() {
	h.register(http.MethodGet, healthRoute, h.healthz)
	h.register(http.MethodGet, openAPIRoute, h.serveOpenAPI)
	if m := h.opts.Metrics; m != nil {
		h.register(http.MethodGet, metricsRoute, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			noteRoute(w, metricsRoute)
			m.ServeHTTP(w, r)
		})
	}
}

// healthz answers 200 {status: "ok"} while the Store is open and the
// Handler is not shutting down, else 503 store_closed (with Retry-After).
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	noteRoute(w, healthRoute)
	x := newExchange(w, r, h)
	if h.shuttingDown.Load() || h.store.Closed() {
		h.writeError(w, r, x, errorf(projectdata.ErrStoreClosed, "the server is shutting down"))
		return
	}
	h.writeData(w, x, http.StatusOK, map[string]string{"status": "ok"})
}

// BeginShutdown marks the Handler as shutting down: from then on GET
// /healthz answers 503, so that load balancers stop sending it requests,
// while every other route goes on serving the requests that still come.
// Call it before http.Server.Shutdown. It is safe to call more than once.
func (h *Handler) BeginShutdown() { h.shuttingDown.Store(true) }
