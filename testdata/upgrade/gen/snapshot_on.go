//go:build snapshot

package main

import (
	"context"
	"log"
	"path/filepath"

	"github.com/projectdata/projectdata"
)

// snapshot takes a project export and returns its file's path in the
// project folder.
func snapshot(ctx context.Context, s *projectdata.Store, p, folder string) string {
	must1(s.CreateProjectExport(ctx, p))
	files := must1(filepath.Glob(filepath.Join(folder, "exports", "*.sqlite")))
	if len(files) != 1 {
		log.Fatalf("snapshot files: %v", files)
	}
	return "exports/" + filepath.Base(files[0])
}
