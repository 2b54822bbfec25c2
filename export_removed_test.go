package projectdata_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestExportOfARemovedProjectLeavesNoFolder: an export (CSV or snapshot)
// that runs just after the project's folder was moved away (by an operator
// about to restore it), before the Store noticed, fails and makes no
// folder of that slug again, which would stand in the restore's way.
func TestExportOfARemovedProjectLeavesNoFolder(t *testing.T) {
	for _, kind := range []string{"table", "project"} {
		t.Run(kind, func(t *testing.T) {
			is := is.New(t)
			s, dir := pdtest.Open(t, nil)
			_, _, err := s.CreateProject(ctx, "acme", "")
			is.NoErr(err)
			_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
			is.NoErr(err)
			is.NoErr(os.Rename(filepath.Join(dir, "acme"), filepath.Join(t.TempDir(), "acme"))) // moved away at once, as an operator does
			if kind == "table" {
				_, err = s.CreateExport(ctx, "acme", "notes", "csv")
			} else {
				_, err = s.CreateProjectExport(ctx, "acme")
			}
			is.Equal(dataFolder(t, dir), []string{})
			pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		})
	}
}

// TestReadOfARemovedProjectIsNotFound: a read that needs a new connection
// just after the project's folder was removed, before the Store noticed,
// is project_not_found, not an internal error.
func TestReadOfARemovedProjectIsNotFound(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "x"}})
	is.NoErr(err)
	is.NoErr(os.Rename(filepath.Join(dir, "acme"), filepath.Join(t.TempDir(), "acme"))) // moved away at once, as an operator does
	_, err = s.ListRecords(ctx, "acme", "notes", projectdata.ListOptions{})
	pdtest.Code(t, err, projectdata.ErrProjectNotFound)
	_, err = s.GetRecord(ctx, "acme", "notes", 1)
	pdtest.Code(t, err, projectdata.ErrProjectNotFound)
}
