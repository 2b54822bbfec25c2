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
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
	// shutdownDelay is how long the server goes on serving once told to
	// stop, /healthz answering 503 (-shutdown-delay).
	shutdownDelay time.Duration
	// drain is how long the requests in flight get once the server has
	// stopped accepting (-drain).
	drain time.Duration
	// stopping, when set, is called once the stop begins: after the
	// shutdown delay, as the drain begins.
	stopping func()
}

var defaultLimits = serverLimits{
	readHeader:     10 * time.Second,
	read:           time.Minute,
	write:          2 * time.Minute,
	idle:           2 * time.Minute,
	drain:          defaultStopTimeout,
	maxHeaderBytes: 64 << 10,
}

// The stop's budget. Kubernetes, for one, kills a pod 30 s after its
// SIGTERM by default: the stop ends within defaultStopTimeout, and closing
// the store and exiting take the rest of those 30 s (milliseconds as a
// rule). Under -replica the drain gets what is left once Litestream's
// final sync is reserved its share: stuck requests are cut off, but the
// sync that puts the last writes on the replica runs.
const (
	defaultStopTimeout = 25 * time.Second
	finalSyncReserve   = 15 * time.Second // or 60% of a -stop-timeout under 25 s
	minFinalSync       = time.Second      // the least an explicit -drain leaves it
)

// stopClock times a stop against its bound, -stop-timeout: the stop
// begins (begin) when the drain does, after -shutdown-delay.
type stopClock struct {
	timeout time.Duration
	began   time.Time
}

func (c *stopClock) begin() { c.began = time.Now() }

// deadline is when the stop must have ended: timeout after it began, or
// from now when it has not begun (serve failed without a signal).
func (c *stopClock) deadline() time.Time {
	if c.began.IsZero() {
		return time.Now().Add(c.timeout)
	}
	return c.began.Add(c.timeout)
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
	// stopTimeout bounds the stop after shutdownDelay: the drain, then
	// with replica Litestream's final sync and exit.
	stopTimeout time.Duration
	// drain is the drain's share of stopTimeout; zero (not set) is the
	// default, defaultDrain.
	drain  time.Duration
	limits serviceLimits // -limit, repeated
}

// defaultDrain is the drain's share of the stop when -drain is not set:
// all of it without a replica; with one, what is left once the final sync
// is reserved finalSyncReserve, or 60% of a shorter stop (the drain gets
// 40% at least).
func (c *serveConfig) defaultDrain() time.Duration {
	if c.replica == "" {
		return c.stopTimeout
	}
	return c.stopTimeout - min(finalSyncReserve, c.stopTimeout*3/5)
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
	fs.DurationVar(&c.stopTimeout, "stop-timeout", defaultStopTimeout, "the stop after -shutdown-delay ends within this: the drain of the requests in flight, then with -replica Litestream's final sync and exit (cut short then: the server exits 1)")
	fs.DurationVar(&c.drain, "drain", 0, "how long the requests in flight get once the server stops accepting, within -stop-timeout; those still running then are cut off (the server exits 1). Default: all of -stop-timeout; with -replica what is left once Litestream's final sync is reserved "+finalSyncReserve.String()+" (60% of a -stop-timeout under 25s)")
	return fs
}

// checkStop checks the stop's flags, -stop-timeout and -drain, and sets
// drain to its default when it is not set.
func (c *serveConfig) checkStop(fs *flag.FlagSet) error {
	drainSet := false
	fs.Visit(func(f *flag.Flag) { drainSet = drainSet || f.Name == "drain" })
	switch {
	case c.stopTimeout <= 0:
		return flagError(fs, "stop-timeout", "must be positive")
	case !drainSet:
		c.drain = c.defaultDrain()
	case c.drain <= 0:
		return flagError(fs, "drain", "must be positive")
	case c.drain > c.stopTimeout:
		return flagError(fs, "drain", fmt.Sprintf("must be within -stop-timeout (%v)", c.stopTimeout))
	case c.replica != "" && c.stopTimeout-c.drain < minFinalSync:
		return flagError(fs, "drain", fmt.Sprintf("must leave Litestream's final sync at least %v of -stop-timeout (%v)", minFinalSync, c.stopTimeout))
	}
	return nil
}

// runServe is the serve command: it serves without creating project demo.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return serve(ctx, args, stdout, stderr, false)
}

// serve runs the HTTP API until ctx ends (main ends it on SIGINT, SIGTERM
// or SIGHUP), then stops accepting, drains the requests in flight, stops
// the replica's Litestream after its final sync, all within -stop-timeout,
// and closes the store. With bootstrap, an empty data folder gets project "demo",
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
	if err := cfg.checkStop(fs); err != nil {
		return err
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
	stop := &stopClock{timeout: cfg.stopTimeout}
	defer func() {
		start := time.Now()
		store.Close()
		if !stop.began.IsZero() { // stopped, not failed at start-up
			logger.Info("shutting down: store closed", "took", time.Since(start))
			logger.Info("stopped", "took", time.Since(stop.began), "stop_timeout", cfg.stopTimeout)
		}
	}()
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
			if serr := rep.Stop(stop.deadline()); serr != nil {
				logger.Error("stop litestream", "err", serr)
				serr = fmt.Errorf("-replica: the replica may lack the last commits: %w", serr)
				if err == nil {
					err = serr
				} else { // the drain ran out too: the replica's state matters more, and is said
					err = fmt.Errorf("%w; %w", err, serr)
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
	lim.shutdownDelay, lim.drain, lim.stopping = cfg.shutdownDelay, cfg.drain, stop.begin
	return runServer(ctx, ln, httpapi.New(store, opts), logger, lim)
}

// runServer serves on ln until ctx ends, then shuts down gracefully: the
// handler's health check turns 503 first (BeginShutdown), the server goes
// on serving for lim.shutdownDelay, closing each connection after its
// request, then stops accepting (calling lim.stopping) and drains the
// requests in flight for up to lim.drain; it closes the connections of those still running then, and
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
	if lim.stopping != nil {
		lim.stopping()
	}
	logger.Info("shutting down: draining requests", "drain", lim.drain)
	start := time.Now()
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
	logger.Info("shutting down: drained", "took", time.Since(start))
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
