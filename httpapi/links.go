package httpapi

import (
	"net/http"
	"net/url"
	"strings"
)

// link returns path (a route of the API, such as
// /projects/acme/export/download/exp_1) as the client must request it:
// under the prefix the Handler is mounted under.
func (h *Handler) link(r *http.Request, path string) string {
	return h.basePath(r) + path
}

// basePath is Options.BasePath, else the part of the request's path that a
// wrapper (http.StripPrefix) removed before the Handler saw it: what the
// client sent (RequestURI) less what the router sees (URL).
func (h *Handler) basePath(r *http.Request) string {
	if h.opts.BasePath != "" {
		return h.opts.BasePath
	}
	if r.RequestURI == "" || r.RequestURI == "*" {
		return "" // a request made in process, or OPTIONS *
	}
	sent, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return ""
	}
	full, seen := sent.EscapedPath(), r.URL.EscapedPath()
	if prefix, ok := strings.CutSuffix(full, seen); ok && strings.HasPrefix(prefix, "/") {
		return strings.TrimSuffix(prefix, "/")
	}
	return ""
}
