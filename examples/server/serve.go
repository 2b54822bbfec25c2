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
	"net/url"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/prommetrics"
)

// serverLimits guard the server against slow, stalled or greedy clients,
// and time its shutdown.
type serverLimits struct {
	readHeader, read, write, idle, drain time.Duration
	maxHeaderBytes                       int
	// shutdownDelay is how long the server goes on serving once told to
	// stop, /healthz answering 503 (-shutdown-delay).
	shutdownDelay time.Duration
}

var defaultLimits = serverLimits{
	readHeader:     10 * time.Second,
	read:           time.Minute,
	write:          2 * time.Minute,
	idle:           2 * time.Minute,
	drain:          30 * time.Second,
	maxHeaderBytes: 64 << 10,
}

// serveConfig is what the serve flags set. Adding a flag is a field here
// and a line in flags.
type serveConfig struct {
	addr     string
	data     string
	metrics  bool
	maxConns int
	replica  string // a replica URL: Litestream replicates every project
	// litestream is the Litestream binary for replica (default: on PATH).
	litestream    string
	shutdownDelay time.Duration
	limits        serviceLimits // -limit, repeated
}

func (c *serveConfig) flags(name string) *flag.FlagSet {
	fs := newFlags(name)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address, HOST:PORT (:PORT listens on every interface)")
	fs.StringVar(&c.data, "data", defaultDataDir, "data folder (created if missing)")
	fs.BoolVar(&c.metrics, "metrics", true, "serve Prometheus metrics at GET /metrics")
	fs.IntVar(&c.maxConns, "max-conns", defaultMaxConns, "connections served at once; when all are taken, the one idle the longest is closed for a new one, and more wait in the kernel's backlog")
	fs.StringVar(&c.replica, "replica", "", "replicate every project with Litestream to this URL (s3://BUCKET/PATH?endpoint=…&region=…&force-path-style=true, or file:///PATH)")
	fs.StringVar(&c.litestream, "litestream", "", "litestream binary for -replica (default: litestream on PATH)")
	fs.Var(&c.limits, "limit", "one of the service's bounds, as NAME=VALUE (listed below); repeat it for each")
	fs.DurationVar(&c.shutdownDelay, "shutdown-delay", 0, "on SIGINT or SIGTERM, go on serving this long with /healthz answering 503 (and no keep-alive) before draining, so that a load balancer stops sending requests first; a second signal ends the server at once")
	return fs
}

// runServe is the serve command: it serves without creating project demo.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return serve(ctx, args, stdout, stderr, false)
}

// serve runs the HTTP API until ctx ends (main ends it on SIGINT or
// SIGTERM), then stops accepting, drains the requests in flight and closes
// the store. With bootstrap, an empty data folder gets project "demo",
// whose admin token is printed once on stdout, once the listener is bound.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, bootstrap bool) (err error) {
	var cfg serveConfig
	fs := cfg.flags("serve")
	if _, err := parseFlags(fs, args, 0, stdout); err != nil {
		return err
	}
	switch {
	case cfg.addr == "": // net.Listen would take every interface and a random port
		return flagError(fs, "addr", "want HOST:PORT, such as 127.0.0.1:8080")
	case cfg.maxConns < 1:
		return flagError(fs, "max-conns", "must be at least 1")
	case cfg.shutdownDelay < 0:
		return flagError(fs, "shutdown-delay", "must not be negative")
	}
	// -replica is checked before anything is bound or created.
	var replica *url.URL
	var litestream, litestreamVersion string
	if cfg.replica != "" {
		var err error
		if replica, err = parseReplicaURL(cfg.replica); err != nil {
			return usageErrorf("serve: -replica: %v (run 'server serve -h')", err)
		}
		if litestream, litestreamVersion, err = findLitestream(ctx, cfg.litestream); err != nil {
			return fmt.Errorf("-replica: %w", err)
		}
	}
	logger, accessLog, logs := newBufferedLoggers(stderr)
	defer logs.Flush() // deferred first: runs last
	tcp, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	ln := newBoundedListener(tcp, cfg.maxConns, logger)
	defer ln.Close()
	// Under Litestream, checkpoints are Litestream's (see replica.go).
	storeOpts := cfg.limits.store
	storeOpts.Logger, storeOpts.ReplicatorCheckpoints = logger, replica != nil
	store, err := projectdata.Open(cfg.data, &storeOpts)
	if err != nil {
		return err
	}
	defer store.Close()
	if replica != nil {
		rep, rerr := startReplicator(cfg.data, replica, litestream, litestreamVersion, logger, stderr)
		if rerr != nil {
			return fmt.Errorf("-replica: %w", rerr)
		}
		// Stopped once the requests have drained, before the store closes:
		// its final sync reads every commit from the WAL, which closing
		// the last connection would checkpoint away. A failed final sync
		// fails the command: whoever stopped the server (to move its
		// projects) must not take the replica for complete.
		defer func() {
			if serr := rep.Stop(replicaStopTimeout); serr != nil {
				logger.Error("stop litestream", "err", serr)
				if err == nil {
					err = fmt.Errorf("-replica: the replica may lack the last commits: %w", serr)
				}
			}
		}()
	}
	if bootstrap {
		if err := bootstrapDemo(ctx, store, stdout); err != nil {
			return err
		}
	}
	opts := &cfg.limits.api
	opts.Logger = accessLog
	if cfg.metrics {
		opts.Metrics = prommetrics.New(store)
	}
	logger.Info("serving", "addr", ln.Addr().String(), "data", cfg.data, "metrics", cfg.metrics)
	lim := defaultLimits
	lim.shutdownDelay = cfg.shutdownDelay
	return runServer(ctx, ln, httpapi.New(store, opts), logger, lim)
}

// runServer serves on ln until ctx ends, then shuts down gracefully: the
// handler's health check turns 503 first (BeginShutdown), the server goes
// on serving for lim.shutdownDelay, closing each connection after its
// request, then stops accepting and drains the requests in flight for up
// to lim.drain; it closes the connections of those still running then, and
// returns an error that says so. A listener with a ConnState method
// (boundedListener) hears of each connection's state.
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
	if b, ok := ln.(interface {
		ConnState(net.Conn, http.ConnState)
	}); ok {
		srv.ConnState = b.ConnState // boundedListener closes idle connections for room
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
	if d, ok := h.(interface{ BeginShutdown() }); ok {
		d.BeginShutdown()
	}
	if lim.shutdownDelay > 0 {
		logger.Info("shutting down: serving on while load balancers see /healthz 503", "delay", lim.shutdownDelay)
		srv.SetKeepAlivesEnabled(false)
		select {
		case <-time.After(lim.shutdownDelay):
		case err := <-served:
			return err
		}
	}
	logger.Info("shutting down: draining requests")
	drainCtx, cancel := context.WithTimeout(context.Background(), lim.drain)
	defer cancel()
	err := srv.Shutdown(drainCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		// The requests still running past the drain are cut off: closing
		// their connections ends their contexts, so that the store, closed
		// next, does not wait for them for as long as they like.
		logger.Warn("shutting down: requests still running after the drain; closing their connections", "drain", lim.drain)
		srv.Close()
		err = fmt.Errorf("requests still running after the %v drain were cut off", lim.drain)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// bootstrapDemo creates project "demo" when the data folder has no project.
func bootstrapDemo(ctx context.Context, store *projectdata.Store, stdout io.Writer) error {
	projects, err := store.ListProjects(ctx)
	if err != nil || len(projects) > 0 {
		// A project that cannot be read (err names it) is a project
		// too: no demo beside it, and the server serves the others.
		return nil
	}
	_, tok, err := store.CreateProject(ctx, "demo", "Demo")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "created project demo; its admin token (shown once):\n%s\n", tok.Token)
	return err
}
