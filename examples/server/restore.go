package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/projectdata/projectdata"
)

// projectRestore creates project SLUG from a snapshot file (a project
// export) or from a replica URL (s3://… or file://…, the database's
// replica: `serve -replica URL` replicates project P to URL/P/project.db),
// at its latest state or at TIME (RFC 3339). A replica is first restored by
// `litestream restore` into a temporary file; then the Store checks the
// database and moves it into place (see projectdata.Store.RestoreProject).
func projectRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("project restore")
	data := fs.String("data", defaultDataDir, "data folder")
	from := fs.String("from", "", "snapshot file, or replica URL (s3://BUCKET/PATH/SLUG/project.db?endpoint=…, file:///PATH/SLUG/project.db)")
	atText := fs.String("at", "", "restore the replica as it was at this time (RFC 3339); replica URLs only")
	bin := fs.String("litestream", "", "litestream binary (default: litestream on PATH)")
	rest, err := parseFlags(fs, args, 1, stdout)
	if err != nil {
		return err
	}
	if *from == "" {
		return usageErrorf("project restore: -from is required (run 'server project restore -h')")
	}
	slug := rest[0]
	var at time.Time
	if *atText != "" {
		if at, err = time.Parse(time.RFC3339Nano, *atText); err != nil {
			return usageErrorf("project restore: -at %q: want an RFC 3339 time such as 2026-11-21T14:05:09Z", *atText)
		}
	}
	var replica *url.URL
	if isURL(*from) {
		if replica, err = parseReplicaURL(*from); err != nil {
			return usageErrorf("project restore: -from: %v (run 'server project restore -h')", err)
		}
	} else if !at.IsZero() {
		return usageErrorf("project restore: -at needs a replica URL: a snapshot file holds one instant")
	}
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer store.Close()
	// Before a replica is downloaded (about 15 s a GB), not after.
	if err := checkNewProject(ctx, store, *data, slug); err != nil {
		return err
	}
	var p projectdata.Project
	if replica != nil {
		// Downloaded into the restore's own folder in the data folder:
		// no copy, and no space needed in $TMPDIR.
		p, err = store.RestoreProjectWith(ctx, slug, func(ctx context.Context, out string) error {
			return restoreFromReplica(ctx, *bin, replica, at, out)
		})
	} else {
		p, err = store.RestoreProject(ctx, slug, *from)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "restored project %s (%s)\n", p.Slug, listed(p.Name))
	return nil
}

// checkNewProject refuses a slug that RestoreProject would refuse, invalid
// or taken, without building anything.
func checkNewProject(ctx context.Context, store *projectdata.Store, dir, slug string) error {
	_, _, err := store.GetProject(ctx, slug) // the Store's slug check
	if err != nil && !errors.Is(err, projectdata.ErrProjectNotFound) {
		return err
	}
	// Any entry of that name, as the Store's own test: a folder without a
	// database is no project, yet in the way.
	if _, err := os.Lstat(filepath.Join(dir, slug)); err == nil {
		return &projectdata.Error{Code: projectdata.ErrProjectExists, Message: fmt.Sprintf("project %q already exists", slug)}
	}
	return nil
}

// urlPrefix is how a URL (RFC 3986 scheme, then "://") starts.
var urlPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// isURL tells a URL from a file path: any URL, so that one that is no
// replica URL is refused as such (quoted without its password), not looked
// for as a file.
func isURL(s string) bool { return urlPrefix.MatchString(s) }
