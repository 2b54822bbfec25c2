package projectdata_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestCreateProject(t *testing.T) {
	t.Run("ReturnsProjectAndAdminToken", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 5, 9, 123456789, time.UTC))
		s, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
		p, tok, err := s.CreateProject(ctx, "acme", "Acme")
		is.NoErr(err)
		is.Equal(p.Slug, "acme")
		is.Equal(p.Name, "Acme")
		is.Equal(p.CreatedAt.String(), "2026-11-21T14:05:09.123Z")
		is.True(strings.HasPrefix(tok.Token, "pat_"))
		is.True(len(tok.Token) >= 4+52) // 32 random bytes in base32
		is.Equal(tok.Role, projectdata.RoleAdmin)
		is.Equal(tok.TokenType, "project_api_token")
		is.True(tok.ExpiresAt == nil)
		_, err = os.Stat(filepath.Join(dir, "acme", "exports"))
		is.NoErr(err)
	})
	t.Run("EmptyNameMeansSlug", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.Open(t, nil)
		p, _, err := s.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		is.Equal(p.Name, "acme")
	})
	t.Run("ExistingSlugIsRefused", func(t *testing.T) {
		s, _ := pdtest.NewProject(t, nil)
		_, _, err := s.CreateProject(ctx, "acme", "")
		pdtest.Code(t, err, projectdata.ErrProjectExists)
	})
	t.Run("LeavesNoTemporaryFolder", func(t *testing.T) {
		is := is.New(t)
		s, dir := pdtest.Open(t, nil)
		_, _, err := s.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		entries, err := os.ReadDir(dir)
		is.NoErr(err)
		is.Equal(len(entries), 1)
		is.Equal(entries[0].Name(), "acme")
	})
}

func TestProjectSlugs(t *testing.T) {
	cases := []struct {
		name, slug string
		ok         bool
	}{
		{"Simple", "acme", true},
		{"DigitsAndDashes", "0-a-9", true},
		{"SixtyThreeChars", strings.Repeat("a", 63), true},
		{"SixtyFourChars", strings.Repeat("a", 64), false},
		{"Empty", "", false},
		{"UpperCase", "Acme", false},
		{"LeadingDash", "-acme", false},
		{"Dot", "a.b", false},
		{"DotDot", "..", false},
		{"Traversal", "../etc", false},
		{"Slash", "a/b", false},
		{"Backslash", `a\b`, false},
		{"Space", "a b", false},
		{"NUL", "a\x00b", false},
		{"Unicode", "ácme", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			s, dir := pdtest.Open(t, nil)
			_, _, err := s.CreateProject(ctx, c.slug, "")
			if c.ok {
				is.NoErr(err)
				return
			}
			pdtest.Code(t, err, projectdata.ErrInvalidProjectSlug)
			entries, _ := os.ReadDir(dir)
			is.Equal(len(entries), 0) // never reached the file system
			_, _, err = s.GetProject(ctx, c.slug)
			pdtest.Code(t, err, projectdata.ErrInvalidProjectSlug)
		})
	}
}

func TestGetProject(t *testing.T) {
	t.Run("CountsTables", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		_, n, err := s.GetProject(ctx, "acme")
		is.NoErr(err)
		is.Equal(n, 0)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a"})
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "b"})
		is.NoErr(err)
		_, n, err = s.GetProject(ctx, "acme")
		is.NoErr(err)
		is.Equal(n, 2)
	})
	t.Run("UnknownProject", func(t *testing.T) {
		s, _ := pdtest.NewProject(t, nil)
		_, _, err := s.GetProject(ctx, "nope")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = s.RenameProject(ctx, "nope", "x")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = s.ListTokens(ctx, "nope")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = s.CreateToken(ctx, "nope", projectdata.NewToken{})
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = s.Authenticate(ctx, "nope", "pat_x")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = s.ListTables(ctx, "nope")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
	})
	t.Run("FolderWithoutDatabaseIsNotAProject", func(t *testing.T) {
		s, dir := pdtest.Open(t, nil)
		if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.GetProject(ctx, "empty")
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		_, err = os.Stat(filepath.Join(dir, "empty", "project.db"))
		if !os.IsNotExist(err) {
			t.Fatal("a lookup created a database")
		}
	})
}

func TestRenameProject(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"Empty", ""}, {"Blank", "  \t "}, {"TooLong", strings.Repeat("x", 201)}, {"InvalidUTF8", "a\xffb"},
		{"Newline", "Evil\nforged  Row"}, {"Escape", "\x1b[31mRED"}, {"C1Control", "a\u009bb"},
	} {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s, _ := pdtest.NewProject(t, nil)
			_, err := s.RenameProject(ctx, "acme", c.value)
			pdtest.Code(t, err, projectdata.ErrInvalidProjectName)
			p, _, err := s.GetProject(ctx, "acme")
			is.NoErr(err)
			is.Equal(p.Name, "Acme")
		})
	}
	t.Run("SetsNameAndUpdatedAt", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		clock.Advance(time.Hour)
		p, err := s.RenameProject(ctx, "acme", "  New name ")
		is.NoErr(err)
		is.Equal(p.Name, "New name")
		is.Equal(p.UpdatedAt.String(), "2026-01-01T01:00:00.000Z")
		is.Equal(p.CreatedAt.String(), "2026-01-01T00:00:00.000Z")
		got, _, err := s.GetProject(ctx, "acme")
		is.NoErr(err)
		is.Equal(got, p)
	})
}

// TestCreateProjectRefusesAProjectToken: a token belongs to one project, so
// a context carrying one creates no project, as it lists and restores none:
// whatever its role, it got no admin token of a project of its choosing.
func TestCreateProjectRefusesAProjectToken(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	for _, role := range []projectdata.Role{projectdata.RoleRead, projectdata.RoleAdmin} {
		_, tok, err := s.CreateProject(pdtest.As(t, s, role), "other", "")
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		is.Equal(tok.Token, "")
	}
	_, err = os.Stat(filepath.Join(dir, "other"))
	is.True(os.IsNotExist(err))
	ps, err := s.ListProjects(ctx)
	is.NoErr(err)
	is.Equal(len(ps), 1) // acme alone
}

func TestListProjects(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	for _, slug := range []string{"b", "a", "c"} {
		_, _, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
	}
	is.NoErr(os.Mkdir(filepath.Join(dir, "not-a-project"), 0o755))
	ps, err := s.ListProjects(ctx)
	is.NoErr(err)
	is.Equal(len(ps), 3)
	is.Equal(ps[0].Slug, "a")
	is.Equal(ps[2].Slug, "c")

	tok, err := s.CreateToken(ctx, "a", projectdata.NewToken{Role: projectdata.RoleAdmin})
	is.NoErr(err)
	c, err := s.Authenticate(ctx, "a", tok.Token)
	is.NoErr(err)
	_, err = s.ListProjects(projectdata.WithCaller(ctx, c))
	pdtest.Code(t, err, projectdata.ErrPermissionDenied)

	// A damaged project does not hide the others.
	is.NoErr(os.Mkdir(filepath.Join(dir, "bad"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "bad", "project.db"), []byte("not a database, but long enough to be read as one"), 0o644))
	ps, err = s.ListProjects(ctx)
	is.True(err != nil && strings.Contains(err.Error(), `project "bad"`))
	is.Equal(len(ps), 3)
	is.Equal(ps[0].Slug, "a")
}

func TestOpenRemovesAbandonedProjectFolders(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	_, _, err = s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	is.NoErr(s.Close())
	stage := func(name string, age time.Duration) {
		path := filepath.Join(dir, name)
		is.NoErr(os.Mkdir(path, 0o755))
		is.NoErr(os.WriteFile(filepath.Join(path, "project.db"), []byte("half a copy"), 0o644))
		then := time.Now().Add(-age)
		is.NoErr(os.Chtimes(filepath.Join(path, "project.db"), then, then))
		is.NoErr(os.Chtimes(path, then, then))
	}
	stage(".restoring-big-123", 2*time.Hour) // a restore killed two hours ago
	stage(".creating-new-456", 2*time.Hour)
	stage(".restoring-now-789", time.Minute) // maybe another process's, under way
	stage(".litestream", 2*time.Hour)        // not the Store's
	s, err = projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	is.Equal(dataFolder(t, dir), []string{".litestream", ".restoring-now-789", "acme"})
}

// TestOpenRefusesAProjectFolder: a project's own folder, given as the data
// folder by mistake, listed no project, and serving it would have made
// projects inside the project's folder.
func TestOpenRefusesAProjectFolder(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, err = projectdata.Open(filepath.Join(dir, "acme"), nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "project's folder"))
	entries, err := os.ReadDir(filepath.Join(dir, "acme"))
	is.NoErr(err)
	for _, e := range entries { // nothing made in it
		is.True(e.Name() == "project.db" || e.Name() == "exports" || strings.HasPrefix(e.Name(), "project.db-"))
	}
}
