package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/projectdata/projectdata"
)

const projectRestoreUsage = "usage: server project restore [-data DIR] -from SNAPSHOT_FILE|REPLICA_URL [-at TIME] [-litestream PATH] SLUG"

// projectRestore creates project SLUG from a snapshot file (a project
// export) or from a replica URL (s3://… or file://…, the database's
// replica: `serve -replica URL` replicates project P to URL/P/project.db),
// at its latest state or at TIME (RFC 3339). A replica is first restored by
// `litestream restore` into a temporary file; then the Store checks the
// database and moves it into place (see projectdata.Store.RestoreProject).
func projectRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", defaultDataDir, "data folder")
	from := fs.String("from", "", "snapshot file, or replica URL (s3://BUCKET/PATH/SLUG/project.db?endpoint=…, file:///PATH/SLUG/project.db)")
	atText := fs.String("at", "", "restore the replica as it was at this time (RFC 3339); replica URLs only")
	bin := fs.String("litestream", "", "litestream binary (default: litestream on PATH)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || *from == "" {
		return fmt.Errorf("%s", projectRestoreUsage)
	}
	slug := rest[0]
	var at time.Time
	if *atText != "" {
		if at, err = time.Parse(time.RFC3339Nano, *atText); err != nil {
			return fmt.Errorf("-at %q: want an RFC 3339 time such as 2026-11-21T14:05:09Z", *atText)
		}
	}
	source := *from
	if isReplicaURL(source) {
		u, err := parseReplicaURL(source)
		if err != nil {
			return err
		}
		path, cleanup, err := restoreFromReplica(ctx, *bin, u, at)
		if err != nil {
			return err
		}
		defer cleanup()
		source = path
	} else if !at.IsZero() {
		return fmt.Errorf("-at needs a replica URL: a snapshot file holds one instant")
	}
	store, err := projectdata.Open(*data, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	p, err := store.RestoreProject(ctx, slug, source)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "restored project %s (%s)\n", p.Slug, p.Name)
	return nil
}

// isReplicaURL tells a replica URL from a file path.
func isReplicaURL(s string) bool {
	return strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "file://")
}
