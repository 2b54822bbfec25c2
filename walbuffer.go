package projectdata

import (
	"encoding/binary"
	"net/url"
	"sync"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/pkg/errors"
)

// walBufferVFSName is the SQLite VFS that project databases are opened
// with: the driver's own "os" VFS, whose WAL files take each transaction's
// frames in one write (see walFile).
const walBufferVFSName = "projectdata-walbuffer"

var registerWALBufferVFS = sync.OnceFunc(func() {
	vfs.Register(walBufferVFSName, walBufferVFS{vfs.Find("os").(vfs.VFSFilename)})
})

// walBufferURI is the URI that opens the database file at path (taken
// as it is: no character of it is special) with walBufferVFSName.
func walBufferURI(path string) string {
	registerWALBufferVFS()
	u := url.URL{Scheme: "file", Path: path, OmitHost: true, RawQuery: "vfs=" + walBufferVFSName}
	return u.String()
}

// walBufferVFS is the "os" VFS with WAL files wrapped in walFile; every
// other file is the os VFS's own.
type walBufferVFS struct{ vfs.VFSFilename }

func (v walBufferVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, out, err := v.VFSFilename.Open(name, flags)
	return wrapWAL(f, flags, err), out, err
}

func (v walBufferVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, out, err := v.VFSFilename.OpenFilename(name, flags)
	return wrapWAL(f, flags, err), out, err
}

func wrapWAL(f vfs.File, flags vfs.OpenFlag, err error) vfs.File {
	if err != nil || flags&vfs.OPEN_WAL == 0 {
		return f
	}
	return &walFile{File: f}
}

// walFile is a WAL file whose appended writes are held until a
// transaction's commit frame is complete, then written in one call.
// SQLite writes each frame in two calls (its 24-byte header, then the
// page), so a commit of n pages took 2n system calls and now takes one.
//
// Nothing SQLite relies on changes: the commit's last write returns only
// once every frame of it is in the file, before SQLite publishes the
// commit in the WAL index (where readers, and other processes, learn of
// new frames), as it did before. Frames written ahead of a commit (a
// transaction whose pages spill from the cache, or whose frames fill the
// buffer) are written at the latest at the commit, or before anything
// reads, syncs, sizes or truncates the file, or before a write would take
// the buffer past maxWALBuffer. A write anywhere but at the end of what is
// held (SQLite rewriting a frame of its open transaction, or starting the
// log over) writes what is held first. A failed write fails the commit, as
// a failed write of the frame would have.
type walFile struct {
	vfs.File
	buf    []byte
	start  int64 // the file offset of buf[0]
	commit bool  // the last write was the header of a commit frame
}

// walFrameHeader is the size of a WAL frame's header; its bytes 4 to 7 are
// the database's size in pages after a commit, zero in other frames.
const walFrameHeader = 24

// maxWALBuffer bounds the buffer of a walFile, which it keeps between
// transactions: a large transaction's frames are written in pieces of at
// most this size. One write larger than that (a page of 64 KiB with its
// frame's header) grows the buffer past it, and that buffer is not kept.
// The buffer only grows as far as the transactions need: a project whose
// commits are small holds little.
const maxWALBuffer = 64 << 10

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	if len(f.buf) > 0 && (off != f.start+int64(len(f.buf)) || len(f.buf)+len(p) > maxWALBuffer) {
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	if len(f.buf) == 0 {
		f.start = off
	}
	if need := len(f.buf) + len(p); need > cap(f.buf) {
		// Grown here rather than by append, whose growth may pass
		// maxWALBuffer and then not be kept.
		buf := make([]byte, len(f.buf), max(need, min(2*cap(f.buf), maxWALBuffer)))
		copy(buf, f.buf)
		f.buf = buf
	}
	f.buf = append(f.buf, p...)
	if len(p) == walFrameHeader {
		f.commit = binary.BigEndian.Uint32(p[4:8]) != 0
		return len(p), nil
	}
	if f.commit {
		f.commit = false
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush writes what f holds.
func (f *walFile) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	_, err := f.File.WriteAt(f.buf, f.start)
	f.buf = f.buf[:0]
	if cap(f.buf) > maxWALBuffer {
		f.buf = nil
	}
	return diskFull(err)
}

// diskFull tags err, a failure to write the WAL, as SQLite's "database or
// disk is full" when the file system is out of room, as SQLite's own VFS
// does: the driver's reports any failed write as "disk I/O error", which
// left an operator to guess.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return vfs.SystemError(err, sqlite3.FULL)
	}
	return err
}

func (f *walFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *walFile) Truncate(size int64) error {
	if err := f.flush(); err != nil {
		return err
	}
	return diskFull(f.File.Truncate(size))
}

func (f *walFile) Sync(flags vfs.SyncFlag) error {
	if err := f.flush(); err != nil {
		return err
	}
	return diskFull(f.File.Sync(flags))
}

func (f *walFile) Size() (int64, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.Size()
}

func (f *walFile) Close() error {
	err := f.flush()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
