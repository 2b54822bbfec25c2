package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// serverLimits guard the server against slow, stalled or greedy clients.
type serverLimits struct {
	readHeader, read, write, idle, drain time.Duration
	maxHeaderBytes                       int
}

var defaultLimits = serverLimits{
	readHeader:     10 * time.Second,
	read:           time.Minute,
	write:          2 * time.Minute,
	idle:           2 * time.Minute,
	drain:          30 * time.Second,
	maxHeaderBytes: 64 << 10,
}

// serve runs the HTTP API until SIGINT or SIGTERM (or ctx ends), then stops
// accepting, drains the requests in flight and closes the store. With
// bootstrap, an empty data folder gets project "demo", whose admin token is
// printed once on stdout.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, bootstrap bool) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", defaultDataDir, "data folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := projectdata.Open(*data, &projectdata.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer store.Close()
	if bootstrap {
		if err := bootstrapDemo(ctx, store, stdout); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger.Info("serving", "addr", ln.Addr().String(), "data", *data)
	return runServer(ctx, ln, httpapi.New(store, &httpapi.Options{Logger: logger}), logger, defaultLimits)
}

// runServer serves on ln until ctx ends, then shuts down gracefully.
func runServer(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger, lim serverLimits) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.readHeader,
		ReadTimeout:       lim.read,
		WriteTimeout:      lim.write,
		IdleTimeout:       lim.idle,
		MaxHeaderBytes:    lim.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if s, ok := h.(interface{ CloseStreams() }); ok {
		srv.RegisterOnShutdown(s.CloseStreams) // a change stream never ends by itself
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests")
	drainCtx, cancel := context.WithTimeout(context.Background(), lim.drain)
	defer cancel()
	err := srv.Shutdown(drainCtx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// bootstrapDemo creates project "demo" when the data folder has no project.
func bootstrapDemo(ctx context.Context, store *projectdata.Store, stdout io.Writer) error {
	projects, err := store.ListProjects(ctx)
	if err != nil || len(projects) > 0 {
		return err
	}
	_, tok, err := store.CreateProject(ctx, "demo", "Demo")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "created project demo; its admin token (shown once):\n%s\n", tok.Token)
	return err
}
