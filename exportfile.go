package projectdata

import (
	"os"

	"github.com/pkg/errors"
)

// openExportFile opens an export's file for download without following a
// link, and only when it is still the file the manifest describes: a
// regular file of size bytes. Otherwise it returns no file and why:
// ExportReasonFileMissing or ExportReasonFileChanged.
func openExportFile(path string, size int64) (*os.File, string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
	switch {
	case os.IsNotExist(err):
		return nil, ExportReasonFileMissing, nil
	case errors.Is(err, errIsLink):
		return nil, ExportReasonFileChanged, nil // a symbolic link
	case err != nil:
		return nil, "", errors.Wrap(err, "open export file")
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", errors.Wrap(err, "stat export file")
	}
	if !info.Mode().IsRegular() || info.Size() != size {
		f.Close()
		return nil, ExportReasonFileChanged, nil
	}
	return f, "", nil
}
