package projectdata

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestRestoreStopsWithItsContext: a restore's copy (plain or through the
// backup API) and its checks stop once ctx ends, with ctx's error, not as
// an unsound source.
func TestRestoreStopsWithItsContext(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s := itemsStoreIn(t, dir, nil) // open: its commits are in project.db-wal
	src := filepath.Join(dir, "acme", dbFileName)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := t.TempDir()

	err := copyRestoreSource(ctx, src, filepath.Join(out, "backup.db")) // the WAL is not empty
	is.True(errors.Is(err, context.Canceled))
	is.NoErr(s.Close()) // the WAL checkpointed away: a plain copy
	err = copyRestoreSource(ctx, src, filepath.Join(out, "copy.db"))
	is.True(errors.Is(err, context.Canceled))

	is.NoErr(copyRestoreSource(context.Background(), src, filepath.Join(out, "good.db")))
	_, err = s.adoptRestored(ctx, filepath.Join(out, "good.db"), "copy")
	is.True(errors.Is(err, context.Canceled))
	_, err = os.Stat(src + "-wal")
	is.True(os.IsNotExist(err))
}
