package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestLogBufferHoldsInfoAndWritesWarningsAtOnce(t *testing.T) {
	is := is.New(t)
	var out pdtest.LockedBuffer
	server, logger, logs := newBufferedLoggers(&out)
	logs.every = time.Hour // only a warning, a server's line, a full buffer or Flush writes

	logger.Info("request", "n", 1)
	is.Equal(out.String(), "") // held
	logger.With("project", "acme").Warn("trouble")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	is.Equal(len(lines), 2) // the warning and the line before it, in order
	is.True(strings.Contains(lines[0], "msg=request n=1"))
	is.True(strings.Contains(lines[1], "level=WARN msg=trouble project=acme"))
	logger.Info("request", "n", 2)
	server.Info("litestream started", "pid", 7) // the server's own lines are not held
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	is.Equal(len(lines), 4)
	is.True(strings.Contains(lines[2], "msg=request n=2"))
	is.True(strings.Contains(lines[3], `msg="litestream started" pid=7`))

	before := len(out.String())
	for i := 0; len(out.String()) == before; i++ { // a full buffer is written
		is.True(i < logBufferBytes)
		logger.Info("request", "n", i)
	}
	is.True(len(out.String())-before >= logBufferBytes)
	logger.Info("request", "n", "last")
	is.True(!strings.Contains(out.String(), "n=last"))
	logs.Flush()
	is.True(strings.HasSuffix(out.String(), "n=last\n"))
}

func TestLogBufferWritesInfoWithinItsInterval(t *testing.T) {
	is := is.New(t)
	var out pdtest.LockedBuffer
	_, logger, logs := newBufferedLoggers(&out)
	logs.every = time.Millisecond
	logger.Info("request", "n", 1)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=request n=1") {
		is.True(time.Now().Before(deadline)) // the timer wrote it
		time.Sleep(time.Millisecond)
	}
}

func TestServeWritesItsAccessLogBeforeItReturns(t *testing.T) {
	is := is.New(t)
	addr := freeAddr(t)
	var stdout, stderr pdtest.LockedBuffer
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, []string{"-addr", addr, "-data", t.TempDir()}, &stdout, &stderr, false) }()
	waitUp(t, addr)
	res, err := http.Get("http://" + addr + "/projects/acme/tables")
	is.NoErr(err)
	res.Body.Close()
	is.Equal(res.StatusCode, http.StatusNotFound) // project_not_found
	stop()
	is.NoErr(<-served)
	is.True(strings.Contains(stderr.String(), "msg=request method=GET path=/projects/acme/tables status=404"))
}
