package projectdata

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Export manifest values. A manifest is ready while its file can be
// downloaded, and not_found once the file is gone; the reason says why.
const (
	ExportStatusReady    = "ready"
	ExportStatusNotFound = "not_found"

	ExportReasonFileMissing = "file_missing" // removed behind the Store's back
	ExportReasonExpired     = "expired"      // removed by the Store after expires_at
	ExportReasonFileChanged = "file_changed" // replaced behind the Store's back (a link, another size)
)

// Export list limits of the specification.
const (
	DefaultExportLimit = 50
	MaxExportLimit     = 500
)

// Export is an export manifest: what an export file holds (a table as CSV,
// or the whole project database as SQLite) and where it can be downloaded.
type Export struct {
	// ID is "exp_" and lower-case letters and digits.
	ID    string `json:"id"`
	Kind  string `json:"kind"`  // ExportKindTable or ExportKindProject
	Scope string `json:"scope"` // "project"
	// Project is the project's slug.
	Project string `json:"project"`
	// Table is the name of the exported table; nil for a project export.
	Table  *string `json:"table"`
	Format string  `json:"format"` // "csv" or "sqlite"
	// DownloadName is the file name to offer a person downloading.
	DownloadName string `json:"download_name"`
	// DownloadURL is /projects/{project}/export/download/{id}.
	DownloadURL    string `json:"download_url"`
	StorageBackend string `json:"storage_backend"` // "local"
	ContentType    string `json:"content_type"`    // "text/csv; charset=utf-8"
	// RowCount, SizeBytes and SHA256 (64 lower-case hex digits) describe
	// the file exactly; TableCount is how many tables it holds: 1 for a
	// table export. A project export's RowCount counts the rows of all its
	// application tables.
	RowCount   int64  `json:"row_count"`
	TableCount *int64 `json:"table_count"`
	SizeBytes  int64  `json:"size_bytes"`
	SHA256     string `json:"sha256"`
	// Status is ExportStatusReady or ExportStatusNotFound.
	Status string `json:"status"`
	// StatusReason is nil while ready, else ExportReasonFileMissing,
	// ExportReasonExpired or ExportReasonFileChanged.
	StatusReason *string `json:"status_reason"`
	// MissingAt is when the Store found the file gone (or removed it).
	MissingAt *Timestamp `json:"missing_at"`
	CreatedAt Timestamp  `json:"created_at"`
	// ExpiresAt is CreatedAt + Options.ExportTTL; the Store removes the file
	// after it.
	ExpiresAt Timestamp `json:"expires_at"`
}

// ExportQuery selects a page of export manifests.
type ExportQuery struct {
	// Status is "ready", "not_found", or "all" or empty for every manifest.
	Status string
	// Limit is the page size. Zero: 50; otherwise clamped to 1..500.
	Limit int
	// Offset is how many manifests to skip; it must not be negative.
	Offset int
}

// ExportPage is a page of export manifests, newest first.
type ExportPage struct {
	Exports []Export `json:"exports"`
	// Total counts the manifests matching the status, across all pages.
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// Export kinds: a table as CSV, or the whole project database as SQLite.
const (
	ExportKindTable   = "table_export"
	ExportKindProject = "project_export"
)

const (
	exportKind        = ExportKindTable
	exportScope       = "project"
	exportFormatCSV   = "csv"
	exportContentType = "text/csv; charset=utf-8"
	exportBackend     = "local"
)

// exportIDPattern is the form of every export id; an id from input reaches
// the file system only after matching it.
var exportIDPattern = regexp.MustCompile(`^exp_[a-z0-9]{1,64}$`)

// CreateExport writes a table (by numeric id or name) to a CSV file in the
// project's exports folder and records its manifest, which it returns.
//
// The rows are read in one read transaction, so the file is a consistent
// snapshot while writes go on. The file is written under a temporary name,
// synced and renamed into place, and the manifest is recorded only then:
// no manifest ever describes a partial file, and a failure leaves no file.
// The rows are read on a connection of the export's own, never one of the
// project's readers; at most Options.MaxExportsPerProject exports of a
// project run at once.
//
// The CSV follows RFC 4180 except that records end in LF ("\n"): a header
// of the column names, then every row in primary-key order. Fields that
// hold a comma, a quote, CR or LF, or begin with white space, are quoted
// (quotes doubled) and otherwise written byte for byte. NULL is an empty
// field and the empty string a quoted one (""), a REAL is written as Go's
// strconv 'g' with the shortest exact digits, and a BLOB as standard
// base64 (with padding).
//
// Errors: ErrInvalidExportFormat (format other than "" or "csv", any case),
// ErrTableNotFound, ErrServerBusy (Options.MaxExportsPerProject exports
// ran for longer than Options.QueueTimeout), ErrExportQuotaExceeded (the
// project's export files are at Options.MaxExportBytes, or this one would
// take them past it; never stored as an idempotent answer, see
// WithIdempotency), ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) CreateExport(ctx context.Context, slug, table, format string) (Export, error) {
	var out Export
	err := s.withWrite(ctx, slug, writeCall{op: OpCreateExport, args: []any{table, format}, results: []any{&out}}, func(ctx context.Context, p *project) error {
		if format != "" && !strings.EqualFold(format, exportFormatCSV) {
			return errorf(ErrInvalidExportFormat, "export format %.40q is not supported; use csv", format)
		}
		if table == "" {
			return errorf(ErrInvalidRequest, "table is required: the name or id of the table to export")
		}
		charge, err := s.beginExport(ctx, p)
		if err != nil {
			return err
		}
		recorded := false
		defer func() { charge.end(recorded) }()
		id := newExportID()
		fileName := id + ".csv"
		file, err := writeExportFile(ctx, p, filepath.Join(p.dir, exportsDirName), fileName, table, charge)
		if err != nil {
			return err
		}
		e := s.newExport(slug, id, exportKind, exportFormatCSV, exportContentType, file)
		e.Table = &file.table
		e.DownloadName = file.table + "-" + e.CreatedAt.Format("20060102T150405Z") + ".csv"
		e.TableCount = new(int64(1))
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

// newExportID returns a new export id: "exp_" and 26 random lower-case
// letters and digits.
func newExportID() string { return "exp_" + strings.ToLower(rand.Text()) }

// newExport returns the manifest of a ready export file made now; the
// caller sets the kind's own fields (table, table count, download name).
func (s *Store) newExport(slug, id, kind, format, contentType string, file exportFile) Export {
	now := s.now()
	return Export{
		ID: id, Kind: kind, Scope: exportScope, Project: slug, Format: format,
		DownloadURL:    "/projects/" + slug + "/export/download/" + id,
		StorageBackend: exportBackend, ContentType: contentType,
		RowCount: file.rows, SizeBytes: file.size, SHA256: file.sha256,
		Status: ExportStatusReady, CreatedAt: Timestamp{now}, ExpiresAt: Timestamp{now.Add(s.opts.ExportTTL)},
	}
}

// recordExport records the manifest of a file already in place in the
// exports folder and sets *out to it inside the write (the idempotent
// answer is encoded right after the write's fn); when that fails, the file
// is removed, so that no file outlives a failed export.
func (p *project) recordExport(ctx context.Context, e Export, fileName string, out *Export) error {
	table := "" // the column is NOT NULL; a project export has no table
	if e.Table != nil {
		table = *e.Table
	}
	err := p.write(ctx, func(c *conn) error {
		*out = e
		return c.exec(`INSERT INTO _pd_exports (id, kind, scope, table_name, format, file_name, download_name, content_type,
			row_count, table_count, size_bytes, sha256, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.Kind, e.Scope, table, e.Format, fileName, e.DownloadName, e.ContentType,
			e.RowCount, *e.TableCount, e.SizeBytes, e.SHA256, e.Status, e.CreatedAt.Time, e.ExpiresAt.Time)
	})
	if err != nil {
		os.Remove(filepath.Join(p.dir, exportsDirName, fileName))
	}
	return err
}

// exportFile describes a written export file.
type exportFile struct {
	table string
	rows  int64
	size  int64
	// sha256 is the file's digest in lower-case hex.
	sha256 string
}

// writeExportFile writes the table as CSV to dir/name, atomically (see
// writeFileAtomically). The digest is computed while writing, and every
// buffer of the file is charged (which counts its size) before it is
// written: the export stops with ErrExportQuotaExceeded, leaving no file,
// as soon as it would take the project past Options.MaxExportBytes.
func writeExportFile(ctx context.Context, p *project, dir, name, table string, charge *exportCharge) (out exportFile, err error) {
	err = writeFileAtomically(dir, name, func(f *os.File) error {
		hash := sha256.New()
		buf := bufio.NewWriterSize(io.MultiWriter(quotaWriter{f, charge}, hash), 64<<10)

		// The registry is loaded inside the transaction, so the columns are
		// those of the snapshot the rows come from.
		err := p.exportRead(ctx, func(c *conn) error {
			sc, err := loadSchema(c)
			if err != nil {
				return err
			}
			t, err := sc.lookupTable(table)
			if err != nil {
				return err
			}
			out.table = t.Name
			quoted := make([]string, len(t.columns))
			record := []byte{}
			for i, col := range t.columns {
				quoted[i] = col.quoted
				if i > 0 {
					record = append(record, ',')
				}
				record = appendCSVText(record, col.Name)
			}
			if _, err := buf.Write(append(record, '\n')); err != nil {
				return err
			}
			sql := `SELECT ` + strings.Join(quoted, ", ") + ` FROM ` + t.quoted + ` ORDER BY ` + t.pk.quoted
			return c.query(sql, nil, func(st *sqlite3.Stmt) error {
				record = appendCSVRecord(record[:0], st, len(quoted))
				out.rows++
				_, err := buf.Write(record)
				return err
			})
		})
		if err != nil {
			return dbError(ctx, err)
		}
		if err := buf.Flush(); err != nil {
			if ErrorCode(err) == ErrExportQuotaExceeded {
				return err
			}
			return errors.Wrap(err, "write export file")
		}
		out.size, out.sha256 = charge.written, hex.EncodeToString(hash.Sum(nil)) // the charge counts the file's bytes
		return nil
	})
	return out, err
}

// writeFileAtomically makes the file dir/name appear whole or not at all:
// fill writes a temporary file in dir (it may close it), which is then
// synced and renamed into place, and the folder synced after. On failure
// no file is left.
func writeFileAtomically(dir, name string, fill func(f *os.File) error) (err error) {
	// Not MkdirAll: a project folder removed under the Store (to restore
	// the project, say) must not be made again.
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		if os.IsNotExist(err) {
			return errorf(ErrProjectNotFound, "the project's folder was removed")
		}
		return errors.Wrap(err, "create exports folder")
	}
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return errors.Wrap(err, "create export file")
	}
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	// fill may have closed f (SQLite writes through its own handle), so
	// sync through a handle of our own.
	if err := syncFile(f.Name()); err != nil {
		return errors.Wrap(err, "sync export file")
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return errors.Wrap(err, "move export file into place")
	}
	if err := syncDir(dir); err != nil {
		os.Remove(filepath.Join(dir, name))
		return err
	}
	return nil
}

// appendCSVRecord appends the n columns of st's row as one CSV record,
// LF-terminated (see CreateExport).
func appendCSVRecord(b []byte, st *sqlite3.Stmt, n int) []byte {
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		switch st.ColumnType(i) {
		case sqlite3.INTEGER:
			b = strconv.AppendInt(b, st.ColumnInt64(i), 10)
		case sqlite3.FLOAT:
			if f := st.ColumnFloat(i); !math.IsInf(f, 0) && !math.IsNaN(f) {
				b = strconv.AppendFloat(b, f, 'g', -1, 64)
			} else {
				b = append(b, st.ColumnRawText(i)...) // SQLite's "Inf" or "-Inf", as columnValue
			}
		case sqlite3.TEXT:
			b = appendCSVText(b, st.ColumnRawText(i))
		case sqlite3.BLOB:
			b = base64.StdEncoding.AppendEncode(b, st.ColumnRawBlob(i))
		}
		// NULL: an empty field.
	}
	return append(b, '\n')
}

// appendCSVText appends text as a CSV field: quoted, its quotes doubled,
// when it is empty (an empty field is NULL), holds a comma, a quote, CR or
// LF, begins with white space, or is `\.`, as encoding/csv quotes it.
func appendCSVText[T string | []byte](b []byte, text T) []byte {
	quote := len(text) == 0 || string(text) == `\.` || strings.ContainsAny(string(text), ",\"\r\n")
	if r, _ := utf8.DecodeRuneInString(string(text)); len(text) > 0 && unicode.IsSpace(r) {
		quote = true
	}
	if !quote {
		return append(b, text...)
	}
	b = append(b, '"')
	for _, c := range []byte(text) {
		if c == '"' {
			b = append(b, '"')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

// exportColumns are the manifest columns scanExport reads, file_name last.
const exportColumns = `id, kind, scope, table_name, format, download_name, content_type, row_count, table_count,
	size_bytes, sha256, status, status_reason, missing_at, created_at, expires_at, file_name`

// scanExport reads a manifest selected with exportColumns, and its file's
// name.
func scanExport(st *sqlite3.Stmt, slug string) (Export, string) {
	e := Export{
		ID: st.ColumnText(0), Kind: st.ColumnText(1), Scope: st.ColumnText(2), Project: slug,
		Format: st.ColumnText(4), DownloadName: st.ColumnText(5),
		StorageBackend: exportBackend, ContentType: st.ColumnText(6), RowCount: st.ColumnInt64(7),
		SizeBytes: st.ColumnInt64(9), SHA256: st.ColumnText(10), Status: st.ColumnText(11),
		MissingAt: columnTime(st, 13), CreatedAt: timeOrZero(st, 14), ExpiresAt: timeOrZero(st, 15),
	}
	e.DownloadURL = "/projects/" + slug + "/export/download/" + e.ID
	if e.Kind != ExportKindProject {
		e.Table = new(st.ColumnText(3))
	}
	if st.ColumnType(8) != sqlite3.NULL {
		e.TableCount = new(st.ColumnInt64(8))
	}
	if st.ColumnType(12) != sqlite3.NULL {
		e.StatusReason = new(st.ColumnText(12))
	}
	return e, st.ColumnText(16)
}

// exportPath is the path of a manifest's file, or "" when the stored name
// is not a plain file name inside the exports folder.
func (p *project) exportPath(fileName string) string {
	if fileName == "" || filepath.Base(fileName) != fileName || !filepath.IsLocal(fileName) {
		return ""
	}
	return filepath.Join(p.dir, exportsDirName, fileName)
}

// exportGone tells whether a ready manifest's file is gone, and why: it
// removes the file of an expired manifest, and stats the file of the others
// (one lstat, no read). It returns "" when the file is in place.
//
// An expired manifest is gone even when its file cannot be removed (a
// folder put in its place, say): the failure is logged, not returned, so
// that one such file fails neither every listing of the project nor its
// download.
func (p *project) exportGone(fileName string, expiresAt, now time.Time) (string, error) {
	path := p.exportPath(fileName)
	if !now.Before(expiresAt) {
		if path != "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				p.store.opts.Logger.Warn("remove expired export file", "project", p.slug, "file", fileName, "err", err)
			}
		}
		return ExportReasonExpired, nil
	}
	if path == "" {
		return ExportReasonFileMissing, nil
	}
	// Lstat: a link in the file's place is there (the download refuses
	// it as file_changed); following it could fail for the whole list.
	if _, err := os.Lstat(path); err != nil {
		if reason := exportFileGone(path, err); reason != "" {
			return reason, nil
		}
		return "", errors.Wrap(err, "stat export file")
	}
	return "", nil
}

// markExportsNotFound records manifests (id → reason) as not_found, with
// missing_at now. A manifest no longer ready is left as it is.
func (p *project) markExportsNotFound(ctx context.Context, gone map[string]string, now time.Time) error {
	if len(gone) == 0 {
		return nil
	}
	// Bookkeeping, not the effect of an idempotent operation that calls it.
	return p.write(withoutIdempotencyRecord(ctx), func(c *conn) error {
		for id, reason := range gone {
			if err := c.exec(`UPDATE _pd_exports SET status = ?, status_reason = ?, missing_at = ? WHERE id = ? AND status = ?`,
				ExportStatusNotFound, reason, now, id, ExportStatusReady); err != nil {
				return err
			}
		}
		return nil
	})
}

// reconcileExports brings the manifests in line with the disk: a ready
// manifest past expires_at has its file removed, and it or one whose file
// is gone becomes not_found. When nothing changed it costs one read and one
// stat per ready manifest, and writes nothing. It returns the size_bytes of
// the manifests still ready: the export files the project keeps.
func (s *Store) reconcileExports(ctx context.Context, p *project) (kept int64, err error) {
	type ready struct {
		id, fileName string
		expiresAt    time.Time
		size         int64
	}
	var list []ready
	err = p.read(ctx, func(c *conn) error {
		return c.query(`SELECT id, file_name, expires_at, size_bytes FROM _pd_exports WHERE status = ?`, []any{ExportStatusReady}, func(st *sqlite3.Stmt) error {
			list = append(list, ready{st.ColumnText(0), st.ColumnText(1), timeOrZero(st, 2).Time, st.ColumnInt64(3)})
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	now := s.now()
	gone := map[string]string{}
	for _, r := range list {
		reason, err := p.exportGone(r.fileName, r.expiresAt, now)
		if err != nil {
			return 0, err
		}
		if reason != "" {
			gone[r.id] = reason
		} else {
			kept += r.size
		}
	}
	return kept, p.markExportsNotFound(ctx, gone, now)
}

// ListExports returns a page of the project's export manifests, newest
// first, after reconciling them with the disk (see Export.Status).
//
// Errors: ErrInvalidExportStatus (a status other than "", "all", "ready",
// "not_found"), ErrInvalidRequest (a negative offset), ErrProjectNotFound,
// ErrPermissionDenied. Limit is clamped, never refused.
func (s *Store) ListExports(ctx context.Context, slug string, q ExportQuery) (ExportPage, error) {
	page := ExportPage{Exports: []Export{}, Limit: q.Limit, Offset: q.Offset}
	err := s.withProject(ctx, slug, OpListExports, func(p *project) error {
		where, args := "", []any{}
		switch q.Status {
		case "", "all":
		case ExportStatusReady, ExportStatusNotFound:
			where, args = ` WHERE status = ?`, []any{q.Status}
		default:
			return errorf(ErrInvalidExportStatus, "status %.40q must be ready, not_found or all", q.Status)
		}
		if q.Offset < 0 {
			return errorf(ErrInvalidRequest, "offset must not be negative")
		}
		if page.Limit == 0 {
			page.Limit = DefaultExportLimit
		}
		page.Limit = max(1, min(page.Limit, MaxExportLimit))
		if _, err := s.reconcileExports(ctx, p); err != nil {
			return err
		}
		return p.read(ctx, func(c *conn) error {
			if _, err := c.queryRow(`SELECT count(*) FROM _pd_exports`+where, args, func(st *sqlite3.Stmt) error {
				page.Total = st.ColumnInt(0)
				return nil
			}); err != nil {
				return err
			}
			args = append(args, page.Limit, page.Offset)
			return c.query(`SELECT `+exportColumns+` FROM _pd_exports`+where+` ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`, args, func(st *sqlite3.Stmt) error {
				e, _ := scanExport(st, slug)
				page.Exports = append(page.Exports, e)
				return nil
			})
		})
	})
	if err != nil {
		return ExportPage{}, err
	}
	return page, nil
}

// DeleteNotFoundExports reconciles the manifests with the disk (as
// ListExports does), then deletes every manifest whose status is not_found
// and returns how many it deleted. Ready manifests stay.
//
// Errors: ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) DeleteNotFoundExports(ctx context.Context, slug string) (int, error) {
	var n int
	err := s.withWrite(ctx, slug, writeCall{op: OpDeleteNotFoundExports, args: nil, results: []any{&n}}, func(ctx context.Context, p *project) error {
		if _, err := s.reconcileExports(ctx, p); err != nil {
			return err
		}
		return p.write(ctx, func(c *conn) error {
			if err := c.exec(`DELETE FROM _pd_exports WHERE status = ?`, ExportStatusNotFound); err != nil {
				return err
			}
			n = int(c.db.Changes())
			return nil
		})
	})
	return n, err
}

// OpenExport opens a ready export's file for download and returns its
// manifest; the caller closes the file. The id is checked against the form
// ^exp_[a-z0-9]+$ before it reaches the file system. A manifest whose file
// turns out expired or gone is marked not_found on the way.
//
// Downloading a project export needs the admin role.
//
// Errors: ErrExportNotFound (a malformed or unknown id, a manifest that is
// not ready, expired, or whose file is gone), ErrProjectNotFound,
// ErrPermissionDenied.
func (s *Store) OpenExport(ctx context.Context, slug, id string) (Export, *os.File, error) {
	var (
		e Export
		f *os.File
	)
	err := s.withProject(ctx, slug, OpDownloadExport, func(p *project) error {
		notFound := errorf(ErrExportNotFound, "export %.80q does not exist or its file is no longer available", id)
		if !exportIDPattern.MatchString(id) {
			return notFound
		}
		var fileName string
		found := false
		err := p.read(ctx, func(c *conn) (err error) {
			found, err = c.queryRow(`SELECT `+exportColumns+` FROM _pd_exports WHERE id = ?`, []any{id}, func(st *sqlite3.Stmt) error {
				e, fileName = scanExport(st, slug)
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
		if !found || e.Status != ExportStatusReady {
			return notFound
		}
		if e.Kind == ExportKindProject {
			if err := authorize(ctx, slug, OpDownloadProjectExport); err != nil {
				return err
			}
		}
		now := s.now()
		reason, err := p.exportGone(fileName, e.ExpiresAt.Time, now)
		if err == nil && reason == "" {
			f, reason, err = openExportFile(p.exportPath(fileName), e.SizeBytes)
		}
		if err != nil {
			return errors.Wrap(err, "open export file")
		}
		if reason != "" {
			if err := p.markExportsNotFound(ctx, map[string]string{id: reason}, now); err != nil {
				return err
			}
			return notFound
		}
		return nil
	})
	if err != nil {
		return Export{}, nil, err
	}
	return e, f, nil
}

// orphanAge is how old a file in exports/ without a manifest must be before
// it is removed: younger ones may belong to an export still being written.
const orphanAge = time.Hour

// sweepExports removes what a crash can leave in the exports folder:
// temporary files, and finished files whose manifest was never recorded.
// It runs when a project opens; failures are logged, not returned.
func (p *project) sweepExports() {
	dir := filepath.Join(p.dir, exportsDirName)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	known := map[string]bool{}
	err = p.writer.query(`SELECT file_name FROM _pd_exports`, nil, func(st *sqlite3.Stmt) error {
		known[st.ColumnText(0)] = true
		return nil
	})
	if err != nil {
		p.store.opts.Logger.Warn("sweep exports", "project", p.slug, "err", err)
		return
	}
	cutoff := time.Now().Add(-orphanAge) // file times are real, whatever Options.Now says
	for _, e := range entries {
		name := e.Name()
		if known[name] || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().After(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			p.store.opts.Logger.Warn("sweep exports", "project", p.slug, "file", name, "err", err)
		}
	}
}
