package projectdata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Project export (snapshot) values of the manifest.
const (
	exportFormatSQLite      = "sqlite"
	snapshotContentType     = "application/vnd.sqlite3"
	snapshotFileNameSuffix  = ".sqlite"
	snapshotDownloadPattern = "20060102T150405Z"
)

// CreateProjectExport writes a snapshot of the whole project database (its
// tables, registry, tokens and export manifests) as a SQLite file in the
// project's exports folder, records its manifest (kind "project_export",
// format "sqlite", table null) and returns it. Only an admin may take one,
// or download it.
//
// The snapshot is online and consistent: SQLite's backup API copies the
// database inside one read transaction of a read-only connection, so it is
// the database as of one commit, and writes go on while it is taken (a
// reader never blocks the writer in WAL mode). RowCount counts the rows of
// the application tables in that same transaction. The file is written
// atomically like a CSV export: no manifest ever describes a partial file.
// It counts as an export against Options.MaxExportsPerProject, and its
// file against Options.MaxExportBytes.
//
// Errors: ErrServerBusy (Options.MaxExportsPerProject exports ran for
// longer than Options.QueueTimeout), ErrExportQuotaExceeded (as for
// CreateExport), ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) CreateProjectExport(ctx context.Context, slug string) (Export, error) {
	var out Export
	err := s.withWrite(ctx, slug, writeCall{op: OpCreateProjectExport, results: []any{&out}}, func(ctx context.Context, p *project) error {
		charge, err := s.beginExport(ctx, p)
		if err != nil {
			return err
		}
		recorded := false
		defer func() { charge.end(recorded) }()
		id := newExportID()
		fileName := id + snapshotFileNameSuffix
		file, tables, err := p.writeSnapshot(ctx, filepath.Join(p.dir, exportsDirName), fileName, charge)
		if err != nil {
			return err
		}
		e := s.newExport(slug, id, ExportKindProject, exportFormatSQLite, snapshotContentType, file)
		e.TableCount = &tables
		e.DownloadName = slug + "-" + e.CreatedAt.Format(snapshotDownloadPattern) + snapshotFileNameSuffix
		if err := p.recordExport(ctx, e, fileName, &out); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	if err != nil {
		return Export{}, err
	}
	return out, nil
}

// writeSnapshot copies the project database to dir/name with SQLite's
// backup API, atomically (see writeFileAtomically), and returns the file's
// description and how many application tables it holds.
//
// The copy is as large as the database in the read transaction that takes
// it (its pages): that size is charged before the backup writes anything,
// so a snapshot that would take the project past Options.MaxExportBytes
// fails with ErrExportQuotaExceeded and writes nothing.
func (p *project) writeSnapshot(ctx context.Context, dir, name string, charge *exportCharge) (out exportFile, tables int64, err error) {
	var reserved int64 // bytes charged for the copy before it is made
	err = writeFileAtomically(dir, name, func(f *os.File) error {
		// SQLite writes the file through a handle of its own.
		if err := f.Close(); err != nil {
			return errors.Wrap(err, "close snapshot file")
		}
		err := p.exportRead(ctx, func(c *conn) error {
			// Reading the registry starts the transaction's snapshot; the
			// backup then runs inside it, so the counts and the copy agree.
			sc, err := loadSchema(c)
			if err != nil {
				return err
			}
			tables = int64(len(sc.tables))
			for _, t := range sc.tables {
				if _, err := c.queryRow(`SELECT count(*) FROM `+t.quoted, nil, func(st *sqlite3.Stmt) error {
					out.rows += st.ColumnInt64(0)
					return nil
				}); err != nil {
					return err
				}
			}
			if _, err := c.queryRow(`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`, nil, func(st *sqlite3.Stmt) error {
				reserved = st.ColumnInt64(0)
				return nil
			}); err != nil {
				return err
			}
			if err := charge.grow(reserved); err != nil {
				return err
			}
			return backupTo(ctx, c.db, f.Name())
		})
		if err != nil {
			// A backup that failed part way (the disk full) leaves the
			// journal of its file, which goes with the file.
			os.Remove(f.Name() + "-journal")
			return dbError(ctx, err)
		}
		out.size, out.sha256, err = digestFile(f.Name())
		if err != nil {
			return err
		}
		// The file is the size reserved; should it differ, the charge
		// follows the file.
		return charge.grow(out.size - reserved)
	})
	return out, tables, err
}

// backupPages is how many pages one step of backupTo copies (4 MiB of
// the usual 4 KiB pages) before it looks at its context again.
const backupPages = 1024

// backupTo copies the main database of db to the new file dst with
// SQLite's backup API, backupPages at a time, and stops with ctx's error
// as soon as ctx ends: a backup in one step (sqlite3.Conn.Backup) runs to
// its end whatever the context, SQLite's interrupt not reaching it. A
// backup stopped part way leaves dst partial, for the caller to remove.
// Run inside a read transaction of db, it copies that transaction's
// snapshot: writes of other connections meanwhile do not restart it.
func backupTo(ctx context.Context, db *sqlite3.Conn, dst string) (err error) {
	b, err := db.BackupInit("main", dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); err == nil {
			err = cerr
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if done, err := b.Step(backupPages); done || err != nil {
			return err
		}
	}
}

// digestFile returns a file's size and its SHA-256 in lower-case hex.
func digestFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", errors.Wrap(err, "open file to digest")
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", errors.Wrap(err, "digest file")
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
