package httpapi

// RegisteredRoutes returns "METHOD /path" of every route h serves.
func RegisteredRoutes(h *Handler) []string { return h.registered }
