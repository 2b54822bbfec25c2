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

// TestReplicatorCheckpoints writes about 20 MB (rows and their change log)
// in 20 commits: the Store's checkpoints keep the WAL under 2,000 pages
// and a commit (8 MB and 1 MB), while under ReplicatorCheckpoints nobody
// checkpoints and the WAL holds every commit, for the replicator to
// checkpoint.
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
			for range 20 {
				_, err := s.Insert(ctx, "acme", "notes", rows)
				is.NoErr(err)
			}
			info, err := os.Stat(filepath.Join(dir, "acme", "project.db-wal"))
			is.NoErr(err)
			t.Logf("WAL: %d bytes", info.Size())
			if tc.replicator {
				is.True(info.Size() > 15<<20) // every commit still in the WAL
			} else {
				is.True(info.Size() < 10<<20) // checkpointed as it went
			}
		})
	}
}
