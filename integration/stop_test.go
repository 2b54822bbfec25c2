//go:build unix

package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// holdRequest sends a query's headers and only the start of its body, so
// that the request runs until the server closes its connection.
func holdRequest(t *testing.T, srv *serverProc, token string) {
	t.Helper()
	c, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /projects/acme/query HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", srv.addr, token)
	time.Sleep(200 * time.Millisecond) // read by the server: the request runs
}

// TestStopWithReplicaFitsTheStopTimeout stops serve -replica (the real
// Litestream, S3) while a request never ends: the drain gets its default
// share of -stop-timeout 10s (4 s), the request is cut off, the final sync
// runs in what is left and succeeds, and the whole stop ends within
// -stop-timeout; the server exits 1 for the request, and the replica holds
// every acknowledged batch.
func TestStopWithReplicaFitsTheStopTimeout(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	const bound = 10 * time.Second
	srv, _, token := newReplicatedNode(t, s3, "bounded", "-stop-timeout", bound.String())
	c := srv.client(token)
	want := map[int]int{}
	for n := 1; n <= 10; n++ {
		is.NoErr(c.insertBatch(n))
		want[n] = batchSize
	}
	holdRequest(t, srv, token)
	took, status := srv.stopWithin(bound)
	t.Logf("stopped in %v", took)
	is.Equal(status, 1)
	logs := srv.log()
	is.True(strings.Contains(logs, "server: stopped by SIGTERM: requests still running after the 4s drain were cut off")) // logs
	is.True(strings.Contains(logs, `msg="stopping litestream: final sync done"`))                                         // the sync ran, in time
	is.True(strings.Contains(logs, `msg="stopping litestream: exited"`))
	restored, _ := restoreAndServe(t, s3, "bounded", "")
	is.Equal(restored.client(token).batchCounts(), want)
}

// TestFinalSyncCutShortFailsTheStop stops serve -replica while its S3
// server answers nothing: the final sync cannot finish, is cut short at
// the end of -stop-timeout, Litestream is stopped, and the server exits 1
// saying the replica may lack the last commits, within the bound.
func TestFinalSyncCutShortFailsTheStop(t *testing.T) {
	is := is.New(t)
	s3 := startS3(t)
	const bound = 6 * time.Second
	srv, _, token := newReplicatedNode(t, s3, "stalled", "-stop-timeout", bound.String())
	c := srv.client(token)
	is.NoErr(c.insertBatch(1))
	s3.stall(t)
	is.NoErr(c.insertBatch(2)) // acknowledged; Litestream cannot upload it
	took, status := srv.stopWithin(bound)
	t.Logf("stopped in %v", took)
	is.Equal(status, 1)
	logs := srv.log()
	is.True(strings.Contains(logs, "server: stopped by SIGTERM: -replica: the replica may lack the last commits: final sync cut short after")) // logs
}
