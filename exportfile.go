package projectdata

import (
	"os"
	"syscall"

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
		if reason := exportFileGone(path, err); reason != "" {
			return nil, reason, nil // a socket in its place, a file in its folder's
		}
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

// exportFileGone returns why path holds no export file, given the error of
// opening or stating it: ExportReasonFileMissing when the path leads to no
// file (nothing there; a folder of the path missing, not a folder, or a
// loop of links), ExportReasonFileChanged when something other than a
// regular file is there (a socket, which cannot be opened), or "" for
// another failure (permissions, I/O), which changes no manifest.
func exportFileGone(path string, err error) string {
	if os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
		return ExportReasonFileMissing
	}
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return ExportReasonFileChanged
	}
	return ""
}
