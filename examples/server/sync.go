package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// projectSync asks the Litestream of a server serving the data folder with
// -replica to sync project SLUG to its replica now, and waits until the
// replica holds every commit: the final sync of the move procedure, while
// the node goes on serving its other projects. Writes to the project must
// have stopped first (the proxy no longer routes it to this node).
func projectSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("project sync")
	data := fs.String("data", defaultDataDir, "data folder of the server running with -replica")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the replica")
	rest, err := parseFlags(fs, args, 1, stdout)
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return flagError(fs, "timeout", "must be positive")
	}
	slug := rest[0]
	// The data folder and the slug checked as by the other commands.
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	_, _, err = store.GetProject(ctx, slug)
	store.Close()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(*data)
	if err != nil {
		return err
	}
	socket := controlSocket(dir)
	if _, err := os.Stat(socket); err != nil {
		return fmt.Errorf("no Litestream replicates %s: is a server serving it with -replica?", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := syncDB(ctx, controlClient(socket), filepath.Join(dir, slug, "project.db")); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("project %s: its replica was not confirmed within -timeout %v: %w", slug, *timeout, err)
		}
		return err
	}
	fmt.Fprintf(stderr, "project %s is on its replica\n", slug)
	return nil
}
