//go:build unix

package projectdata_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestSocketInPlaceOfAnExportFile: a socket in an export file's place,
// which cannot be opened (ENXIO), is a changed file, as a FIFO or a
// folder there is: the download is export_not_found and the manifest
// not_found (file_changed), not an internal error at every download.
func TestSocketInPlaceOfAnExportFile(t *testing.T) {
	is := is.New(t)
	f := newExportFixture(t, nil)
	e := f.export(t)
	path := f.file(e.ID)
	is.NoErr(os.Remove(path))
	t.Chdir(filepath.Dir(path)) // a socket's path is short: at most 108 bytes
	l, err := net.Listen("unix", filepath.Base(path))
	is.NoErr(err)
	defer l.Close()

	_, _, err = f.s.OpenExport(ctx, "acme", e.ID)
	pdtest.Code(t, err, projectdata.ErrExportNotFound)
	page, err := f.s.ListExports(ctx, "acme", projectdata.ExportQuery{Status: projectdata.ExportStatusNotFound})
	is.NoErr(err)
	is.Equal(len(page.Exports), 1)
	is.Equal(*page.Exports[0].StatusReason, projectdata.ExportReasonFileChanged)
}
