package httpapi

import (
	"net/http"
	"strings"
)

// What a browser calling from an allowed origin may send and read.
const (
	corsAllowMethods  = "GET, HEAD, POST, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Operation-Key, X-Operation-Run-Id"
	corsExposeHeaders = "Content-Disposition, ETag, Idempotent-Replayed, Retry-After, WWW-Authenticate, X-Request-Id"
	corsMaxAge        = "600" // seconds a browser may cache a preflight answer
)

// originSet is the set of Options.AllowedOrigins.
type originSet struct {
	any     bool
	origins map[string]bool
}

func newOriginSet(list []string) originSet {
	s := originSet{origins: make(map[string]bool, len(list))}
	for _, o := range list {
		if o == "*" {
			s.any = true
		}
		s.origins[strings.TrimSuffix(o, "/")] = true
	}
	return s
}

func (s originSet) enabled() bool { return s.any || len(s.origins) > 0 }

func (s originSet) allows(origin string) bool {
	return origin != "" && (s.any || s.origins[origin])
}

// allowOrigin sets the CORS headers of a response to a request from an
// allowed origin; a request from any other origin gets none, and the
// browser keeps the response from its page.
func (h *Handler) allowOrigin(w http.ResponseWriter, r *http.Request) {
	if !h.origins.enabled() {
		return
	}
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !h.origins.allows(origin) {
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Access-Control-Expose-Headers", corsExposeHeaders)
}

// options answers OPTIONS on a known route: 204 with Allow (the router set
// it), and for a CORS preflight from an allowed origin the methods and
// headers the browser may use. OPTIONS is never method_not_allowed.
func (h *Handler) options(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Access-Control-Request-Method") != "" && h.origins.allows(r.Header.Get("Origin")) {
		w.Header().Set("Access-Control-Allow-Methods", corsAllowMethods)
		w.Header().Set("Access-Control-Allow-Headers", corsAllowHeaders)
		w.Header().Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
}
