// Package bare is the baseline of the load measurements: a bare net/http
// handler that writes a fixed JSON envelope the size and shape of a
// read-by-id answer, the ceiling for any Go HTTP API on the machine. The Go
// load benchmark (httpapi) and the wrk script (examples/wrk) both measure
// against it.
package bare

import (
	"io"
	"net/http"
)

// Envelope is what Handler writes.
var Envelope = []byte(`{"ok":true,"data":{"row":{"id":42,"name":"item 41","note":"seed","price":1.5,"qty":41},"table":"items"},"error":null,"request_id":"req_0123456789abcdef01234567","meta":{"generated_at":"2026-11-21T14:05:09.123Z"}}` + "\n")

// Handler reads the request's body and writes Envelope with the headers
// the API sends.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Request-Id", "req_0123456789abcdef01234567")
		w.Write(Envelope)
	})
}
