package projectdata_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestReplicatorCheckpoints writes about 40 MB (rows and their change log)
// in 40 commits: the Store's checkpoints keep the WAL near 2,000 pages
// (8 MB, plus what commits while a checkpoint runs), while under
// ReplicatorCheckpoints nobody checkpoints and the WAL holds every commit,
// for the replicator to checkpoint.
func TestReplicatorCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name       string
		replicator bool
	}{{"SQLiteCheckpoints", false}, {"ReplicatorCheckpoints", true}} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			s, dir := pdtest.Open(t, &projectdata.Options{ReplicatorCheckpoints: tc.replicator})
			_, _, err := s.CreateProject(ctx, "acme", "")
			is.NoErr(err)
			_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
			is.NoErr(err)
			rows := make([]projectdata.Row, 100)
			for i := range rows {
				rows[i] = projectdata.Row{"body": strings.Repeat("x", 5000)}
			}
			for range 40 {
				_, err := s.Insert(ctx, "acme", "notes", rows)
				is.NoErr(err)
			}
			info, err := os.Stat(filepath.Join(dir, "acme", "project.db-wal"))
			is.NoErr(err)
			t.Logf("WAL: %d bytes", info.Size())
			if tc.replicator {
				is.True(info.Size() > 35<<20) // every commit still in the WAL
			} else {
				is.True(info.Size() < 12<<20) // checkpointed as it went
			}
		})
	}
}
