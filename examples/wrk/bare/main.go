// Command bare serves the baseline of the wrk load script (../run.sh): the
// bare net/http handler of internal/bare.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/projectdata/projectdata/internal/bare"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18091", "listen address")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, bare.Handler()))
}
