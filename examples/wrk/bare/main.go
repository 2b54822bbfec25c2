// Command bare is the baseline of the wrk load script (../run.sh): a bare
// net/http handler that writes a fixed JSON envelope the size and shape of
// a read-by-id answer, the ceiling for any Go HTTP API on the machine.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
)

var envelope = []byte(`{"ok":true,"data":{"table":"items","row":{"id":42,"name":"item 41","note":"seed","price":1.5,"qty":41}},"error":null,"request_id":"req_0123456789abcdef01234567","meta":{"generated_at":"2026-11-21T14:05:09.123Z"}}` + "\n")

func main() {
	addr := flag.String("addr", "127.0.0.1:18091", "listen address")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Request-Id", "req_0123456789abcdef01234567")
		w.Write(envelope)
	})))
}
