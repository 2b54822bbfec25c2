package main

import (
	"context"
	"errors"
	"io"
)

// serve runs the HTTP API. It arrives with the HTTP adapter.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, bootstrap bool) error {
	return errors.New("serve: not built yet")
}
