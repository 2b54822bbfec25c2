// Package prommetrics publishes the metrics of an httpapi.Handler and its
// Store in the Prometheus text format, with the Prometheus Go client.
//
// It is a package of its own so that importing projectdata or httpapi
// does not import Prometheus: an application that wants the metrics sets
//
//	httpapi.New(store, &httpapi.Options{Metrics: prommetrics.New(store)})
//
// and the Handler serves them at GET /metrics. Labels name routes by their
// pattern (/projects/:project/records/:table), methods, statuses and error
// codes: never a project slug, a token or a table name.
package prommetrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// refusalCodes are the error codes of the budgets and queues: a request
// refused with one of them is counted in projectdata_budget_refusals_total.
var refusalCodes = []projectdata.Code{
	projectdata.ErrQueryBudgetExceeded,
	projectdata.ErrQueryResultTooLarge,
	projectdata.ErrServerBusy,
	projectdata.ErrExportQuotaExceeded,
}

// knownMethods are the methods that get a label of their own; any other is
// counted as "other", so that clients cannot grow the label set.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// unmatchedRoute labels the requests that no route served.
const unmatchedRoute = "unmatched"

// Metrics is an httpapi.Metrics that keeps its series in its own
// Prometheus registry. It is safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry
	handler  http.Handler
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	refusals *prometheus.CounterVec
}

var _ httpapi.Metrics = (*Metrics)(nil)

// New returns the metrics of a Handler over store, in a new registry that
// also holds the Go runtime's and the process's metrics:
//
//   - projectdata_http_requests_total{method, route, status}
//   - projectdata_http_request_duration_seconds{method, route} (histogram)
//   - projectdata_budget_refusals_total{code}: query_budget_exceeded,
//     query_result_too_large, server_busy, export_quota_exceeded
//   - projectdata_open_projects, projectdata_operations_in_flight,
//     projectdata_change_followers (gauges)
//   - projectdata_queue_waits_total, projectdata_queue_wait_seconds_total:
//     operations that waited for a connection of their project, and how
//     long in all
func New(store *projectdata.Store) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projectdata_http_requests_total",
			Help: "HTTP requests served, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "projectdata_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its response, by method and route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projectdata_budget_refusals_total",
			Help: "Requests refused by a budget or a full queue, by error code.",
		}, []string{"code"}),
	}
	for _, c := range refusalCodes {
		m.refusals.WithLabelValues(string(c)) // every code present from the start, at 0
	}
	m.registry.MustRegister(
		m.requests, m.latency, m.refusals,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "projectdata_open_projects",
			Help: "Project databases open now.",
		}, func() float64 { return float64(store.Stats().OpenProjects) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "projectdata_operations_in_flight",
			Help: "Store operations under way now.",
		}, func() float64 { return float64(store.Stats().Operations) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "projectdata_change_followers",
			Help: "Followers of change logs now: change streams, and the application's own.",
		}, func() float64 { return float64(store.Stats().ChangeFollowers) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "projectdata_queue_waits_total",
			Help: "Operations that found every connection of their project busy and waited for one.",
		}, func() float64 { return float64(store.Stats().QueueWaits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "projectdata_queue_wait_seconds_total",
			Help: "Time operations waited for a connection of their project, in all.",
		}, func() float64 { return store.Stats().QueueWaitTime.Seconds() }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return m
}

// ObserveRequest counts a served request and its duration, and a budget
// refusal when its error code is one.
func (m *Metrics) ObserveRequest(o httpapi.RequestObservation) {
	method := o.Method
	if !knownMethods[method] {
		method = "other"
	}
	route := o.Route
	if route == "" {
		route = unmatchedRoute
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(o.Status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(o.Duration.Seconds())
	for _, c := range refusalCodes {
		if o.Code == c {
			m.refusals.WithLabelValues(string(c)).Inc()
		}
	}
}

// ServeHTTP serves the metrics in the Prometheus text format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.handler.ServeHTTP(w, r)
}

// Registry returns the registry the metrics are kept in, so that an
// application can add its own collectors to the same /metrics page.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }
