package httpapi

import "net/http"

// RegisteredRoutes returns "METHOD /path" of every route h serves.
func RegisteredRoutes(h *Handler) []string { return h.registered }

// DocumentedRoutes returns "METHOD /path" of every route of the OpenAPI
// document, in the router's form.
func DocumentedRoutes() []string {
	routes := []string{http.MethodGet + " " + healthRoute, http.MethodGet + " " + openAPIRoute, http.MethodGet + " " + metricsRoute}
	for _, rt := range apiRoutes {
		routes = append(routes, rt.method+" "+routerPath(rt.path))
	}
	return routes
}
