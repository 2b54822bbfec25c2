package main

import (
	"context"
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
	slug := rest[0]
	if slug == "" || slug[0] == '.' || filepath.Base(slug) != slug {
		return usageErrorf("project sync: %q is not a project slug", slug)
	}
	dir, err := filepath.Abs(*data)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("data folder %s does not exist (serve creates it; or pass -data)", dir)
	}
	db := filepath.Join(dir, slug, "project.db")
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("project %s does not exist in %s", slug, dir)
	}
	socket := controlSocket(dir)
	if _, err := os.Stat(socket); err != nil {
		return fmt.Errorf("no Litestream replicates %s: is a server serving it with -replica?", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := syncDB(ctx, controlClient(socket), db); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "project %s is on its replica\n", slug)
	return nil
}
