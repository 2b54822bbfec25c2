package projectdata

import (
	"context"
	stderrors "errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Project is a project: a named, self-contained set of tables, tokens and
// exports identified by its slug.
type Project struct {
	ID        int64     `json:"id"`
	Slug      string    `json:"project_slug"`
	Name      string    `json:"project_name"`
	CreatedAt Timestamp `json:"created_at"`
	UpdatedAt Timestamp `json:"updated_at"`
}

const maxProjectNameLen = 200

// checkProjectName validates a display name, which it returns without
// surrounding white space: non-blank, at most 200 bytes, without control
// characters (a newline or an escape sequence in a name would forge rows
// and drive terminals in the listings of operators' tools).
func checkProjectName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errorf(ErrInvalidProjectName, "project_name must be a non-empty string")
	}
	if !utf8.ValidString(name) || len(name) > maxProjectNameLen || hasControl(name) {
		return "", errorf(ErrInvalidProjectName, "project_name must be valid UTF-8 of at most %d bytes, without control characters", maxProjectNameLen)
	}
	return name, nil
}

// hasControl reports whether s holds a control character (C0, DEL or C1).
func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// CreateProject creates a project and its first token, with the admin role.
// An empty name means the slug. The project appears whole or not at all: it
// is built in a temporary folder and renamed into place. It is the
// embedding application's operation: a token belongs to one project, so a
// context carrying a caller is refused, as ListProjects and RestoreProject
// refuse it.
//
// Errors: ErrInvalidProjectSlug, ErrInvalidProjectName, ErrProjectExists,
// ErrPermissionDenied (a caller in ctx), ErrStoreClosed.
func (s *Store) CreateProject(ctx context.Context, slug, name string) (Project, CreatedToken, error) {
	if err := validateSlug(slug); err != nil {
		return Project{}, CreatedToken{}, err
	}
	if _, ok := CallerFrom(ctx); ok {
		return Project{}, CreatedToken{}, errorf(ErrPermissionDenied, "creating a project is not an operation of a project token")
	}
	if name == "" {
		name = slug
	}
	name, err := checkProjectName(name)
	if err != nil {
		return Project{}, CreatedToken{}, err
	}
	if err := ctx.Err(); err != nil {
		return Project{}, CreatedToken{}, err
	}
	if err := s.begin(); err != nil {
		return Project{}, CreatedToken{}, err
	}
	defer s.end()
	tmp, err := s.stageProject(slug, stagingCreate)
	if err != nil {
		return Project{}, CreatedToken{}, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place

	dbPath := filepath.Join(tmp, dbFileName)
	proj, tok, err := s.initProject(dbPath, slug, name)
	if err != nil {
		return Project{}, CreatedToken{}, err
	}
	if err := syncFile(dbPath); err != nil {
		return Project{}, CreatedToken{}, err
	}
	if err := os.Mkdir(filepath.Join(tmp, exportsDirName), 0o755); err != nil {
		return Project{}, CreatedToken{}, errors.Wrap(err, "create exports folder")
	}
	if err := s.placeProject(tmp, slug); err != nil {
		return Project{}, CreatedToken{}, err
	}
	return proj, tok, nil
}

// stageProject refuses an existing project, then makes the temporary
// folder in which a new project is built before placeProject moves it into
// place; the caller removes it. Its name starts with a dot and the verb
// (".creating-acme-…"), never a valid slug, so no listing shows it.
func (s *Store) stageProject(slug, verb string) (string, error) {
	if _, err := os.Lstat(filepath.Join(s.dir, slug)); err == nil {
		return "", errorf(ErrProjectExists, "project %q already exists", slug)
	}
	tmp, err := os.MkdirTemp(s.dir, "."+verb+"-"+slug+"-")
	if err != nil {
		return "", errors.Wrap(err, "create project folder")
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", errors.Wrap(err, "create project folder")
	}
	return tmp, nil
}

// The verbs that name the temporary folders of stageProject.
const (
	stagingCreate  = "creating"
	stagingRestore = "restoring"
)

// stagingVerbs are all of them, for removeAbandonedStaging.
var stagingVerbs = []string{stagingCreate, stagingRestore}

// abandonedStagingAge is how long a temporary project folder (see
// stageProject) must have gone unmodified before Open removes it as left
// by a process that died mid-create or mid-restore: a restore under way
// writes to its folder all the time.
const abandonedStagingAge = time.Hour

// removeAbandonedStaging removes the temporary project folders of the data
// folder that nothing has modified for abandonedStagingAge (a killed
// restore left hundreds of megabytes behind for good).
func (s *Store) removeAbandonedStaging() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !slices.ContainsFunc(stagingVerbs, func(verb string) bool { return strings.HasPrefix(e.Name(), "."+verb+"-") }) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		if time.Since(newestModTime(path)) < abandonedStagingAge { // file times are the real clock's, whatever Options.Now says
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			s.opts.Logger.Warn("remove abandoned project folder", "folder", e.Name(), "err", err)
			continue
		}
		s.opts.Logger.Info("removed abandoned project folder", "folder", e.Name())
	}
}

// newestModTime is the latest modification time of the folder path and the
// files in it.
func newestModTime(path string) time.Time {
	var newest time.Time
	if info, err := os.Stat(path); err == nil {
		newest = info.ModTime()
	}
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	return newest
}

// placeProject renames a finished project folder tmp (in the data folder)
// to the project's own name, refusing an existing project, and makes the
// rename durable.
func (s *Store) placeProject(tmp, slug string) error {
	final := filepath.Join(s.dir, slug)
	// rename(2) would replace an empty folder, so look once more right before.
	if _, err := os.Lstat(final); err == nil {
		return errorf(ErrProjectExists, "project %q already exists", slug)
	}
	if err := os.Rename(tmp, final); err != nil {
		if os.IsExist(err) || errors.Is(err, os.ErrExist) {
			return errorf(ErrProjectExists, "project %q already exists", slug)
		}
		return errors.Wrap(err, "move project folder into place")
	}
	return syncDir(s.dir)
}

// initProject creates the database at path with the control schema, the
// project row and the first admin token.
func (s *Store) initProject(path, slug, name string) (proj Project, tok CreatedToken, err error) {
	db, err := sqlite3.OpenFlags(path, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE|sqlite3.OPEN_EXRESCODE)
	if err != nil {
		return proj, tok, errors.Wrap(err, "create project database")
	}
	c := &conn{db: db, stmts: make(map[string]*sqlite3.Stmt)}
	defer func() {
		if cerr := c.close(); err == nil && cerr != nil {
			err = errors.Wrap(cerr, "close new project database")
		}
	}()
	if err := c.configure(false, s.opts.BusyTimeout); err != nil {
		return proj, tok, errors.Wrap(err, "configure project database")
	}
	// Nobody sees the database before it is renamed into place, so skip
	// SQLite's syncs; syncFile makes the finished file durable in one go.
	if err := c.db.Exec(`PRAGMA synchronous=OFF`); err != nil {
		return proj, tok, err
	}
	if err := migrate(c); err != nil {
		return proj, tok, errors.Wrap(err, "create control schema")
	}
	tx, err := c.db.BeginImmediate()
	if err != nil {
		return proj, tok, err
	}
	defer tx.End(&err)
	now := s.now()
	if err := c.exec(`INSERT INTO _pd_project (id, slug, name, created_at, updated_at) VALUES (1, ?, ?, ?, ?)`, slug, name, now, now); err != nil {
		return proj, tok, err
	}
	tok, err = s.insertToken(c, NewToken{Name: "admin", Role: RoleAdmin})
	if err != nil {
		return proj, tok, err
	}
	proj = Project{ID: 1, Slug: slug, Name: name, CreatedAt: Timestamp{now}, UpdatedAt: Timestamp{now}}
	return proj, tok, nil
}

// syncFile flushes a file to stable storage.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return errors.Wrap(err, "open for sync")
	}
	defer f.Close()
	return errors.Wrap(f.Sync(), "sync file")
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return errors.Wrap(err, "open data folder")
	}
	defer d.Close()
	return errors.Wrap(d.Sync(), "sync data folder")
}

func readProject(c *conn) (Project, error) {
	var p Project
	found, err := c.queryRow(`SELECT id, slug, name, created_at, updated_at FROM _pd_project WHERE id = 1`, nil, func(st *sqlite3.Stmt) error {
		p = Project{ID: st.ColumnInt64(0), Slug: st.ColumnText(1), Name: st.ColumnText(2)}
		if t := columnTime(st, 3); t != nil {
			p.CreatedAt = *t
		}
		if t := columnTime(st, 4); t != nil {
			p.UpdatedAt = *t
		}
		return nil
	})
	if err == nil && !found {
		err = errors.New("project row missing")
	}
	return p, err
}

// GetProject returns the project and how many application tables it has.
//
// Errors: ErrInvalidProjectSlug, ErrProjectNotFound, ErrInvalidToken.
func (s *Store) GetProject(ctx context.Context, slug string) (proj Project, tableCount int, err error) {
	err = s.withProject(ctx, slug, OpGetProject, func(p *project) error {
		return p.read(ctx, func(c *conn) (err error) {
			if proj, err = readProject(c); err != nil {
				return err
			}
			_, err = c.queryRow(`SELECT count(*) FROM _pd_tables`, nil, func(st *sqlite3.Stmt) error {
				tableCount = st.ColumnInt(0)
				return nil
			})
			return err
		})
	})
	return proj, tableCount, err
}

// RenameProject sets the project's display name.
//
// Errors: ErrProjectNotFound, ErrInvalidProjectName, ErrPermissionDenied.
func (s *Store) RenameProject(ctx context.Context, slug, name string) (Project, error) {
	var proj Project
	err := s.withWrite(ctx, slug, writeCall{op: OpRenameProject, args: []any{name}, results: []any{&proj}}, func(ctx context.Context, p *project) error {
		name, err := checkProjectName(name)
		if err != nil {
			return err
		}
		return p.write(ctx, func(c *conn) (err error) {
			if err := c.exec(`UPDATE _pd_project SET name = ?, updated_at = ? WHERE id = 1`, name, s.now()); err != nil {
				return err
			}
			proj, err = readProject(c)
			return err
		})
	})
	return proj, err
}

// ListProjects lists the projects of the data folder, by slug. It is the
// embedding application's operation: a token belongs to one project, so a
// context carrying a caller is refused. A project that cannot be read (its
// database damaged or unreadable) does not hide the others: they are
// returned with an error that names each project that failed.
//
// Errors: ErrPermissionDenied (a caller in ctx).
func (s *Store) ListProjects(ctx context.Context) ([]Project, error) {
	if _, ok := CallerFrom(ctx); ok {
		return nil, errorf(ErrPermissionDenied, "listing projects is not an operation of a project token")
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, errors.Wrap(err, "read data folder")
	}
	var slugs []string
	for _, e := range entries {
		if e.IsDir() && isSlug(e.Name()) {
			if _, err := os.Stat(filepath.Join(s.dir, e.Name(), dbFileName)); err == nil {
				slugs = append(slugs, e.Name())
			}
		}
	}
	sort.Strings(slugs)
	projects := []Project{}
	var failed []error
	for _, slug := range slugs {
		p, _, err := s.GetProject(ctx, slug)
		if ErrorCode(err) == ErrProjectNotFound {
			continue // removed meanwhile
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			failed = append(failed, errors.WithMessagef(err, "project %q", slug))
			continue
		}
		projects = append(projects, p)
	}
	return projects, stderrors.Join(failed...)
}
