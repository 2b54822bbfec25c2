//go:build unix

package projectdata_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestRestoreRefusesAFIFOSource: a named pipe given as the restore source
// is refused as no regular file, without waiting for a writer to open it.
func TestRestoreRefusesAFIFOSource(t *testing.T) {
	is := is.New(t)
	fifo := filepath.Join(t.TempDir(), "source.sqlite")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO:", err)
	}
	s, dir := pdtest.Open(t, nil)
	done := make(chan error, 1)
	go func() {
		_, err := s.RestoreProject(ctx, "copy", fifo)
		done <- err
	}()
	select {
	case err := <-done:
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	case <-time.After(time.Minute):
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil { // lets the stuck open return
			defer w.Close()
			<-done
		}
		t.Fatal("the restore waits for a writer of the FIFO")
	}
	is.Equal(dataFolder(t, dir), []string{})
}
