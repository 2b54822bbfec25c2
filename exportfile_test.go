package projectdata_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestOpenExportServesOnlyTheRecordedFile(t *testing.T) {
	cases := []struct {
		name    string
		replace func(t *testing.T, f exportFixture, path string)
	}{
		{"SymlinkToAnotherFile", func(t *testing.T, f exportFixture, path string) {
			secret := filepath.Join(f.dir, "secret.txt")
			if err := os.WriteFile(secret, []byte(notesCSV), 0o600); err != nil { // same size: only the link gives it away
				t.Fatal(err)
			}
			os.Remove(path)
			if err := os.Symlink(secret, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"FileOfAnotherSize", func(t *testing.T, f exportFixture, path string) {
			if err := os.WriteFile(path, []byte(notesCSV+"extra,row\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"Folder", func(t *testing.T, f exportFixture, path string) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			f := newExportFixture(t, nil)
			e := f.export(t)
			c.replace(t, f, f.file(e.ID))
			_, file, err := f.s.OpenExport(ctx, "acme", e.ID)
			pdtest.Code(t, err, projectdata.ErrExportNotFound)
			is.True(file == nil)
			is.Equal(rawCount(t, f.raw, `SELECT count(*) FROM _pd_exports WHERE status = 'not_found' AND status_reason = 'file_changed' AND missing_at IS NOT NULL`), 1)
		})
	}
}
