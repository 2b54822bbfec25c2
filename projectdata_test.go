package projectdata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"
	pkgerrors "github.com/pkg/errors"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var ctx = context.Background()

func TestErrorCode(t *testing.T) {
	is := is.New(t)
	is.Equal(projectdata.ErrorCode(nil), projectdata.Code(""))
	is.Equal(projectdata.ErrorCode(errors.New("boom")), projectdata.ErrInternal)
	is.Equal(projectdata.ErrorCode(projectdata.ErrTableNotFound), projectdata.ErrTableNotFound)
	wrapped := pkgerrors.Wrap(fmt.Errorf("ctx: %w", projectdata.ErrWhereRequired), "more")
	is.Equal(projectdata.ErrorCode(wrapped), projectdata.ErrWhereRequired)
	is.True(errors.Is(wrapped, projectdata.ErrWhereRequired))
}

func TestErrorMessagesAreForPeople(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, err := s.GetTable(ctx, "acme", "orders")
	var pe *projectdata.Error
	is.True(errors.As(err, &pe))
	is.Equal(pe.Code, projectdata.ErrTableNotFound)
	is.Equal(pe.Message, `table "orders" does not exist`)
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.GetProject(ctx, "acme")
	is.NoErr(err)
	is.NoErr(s.Close())
	is.NoErr(s.Close())
	_, _, err = s.GetProject(ctx, "acme")
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
}

func TestReopenKeepsProjectsAndTokens(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	_, admin, err := s.CreateProject(ctx, "acme", "Acme Inc")
	is.NoErr(err)
	reader, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead, Name: "r"})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders"})
	is.NoErr(err)
	is.NoErr(s.Close())

	s, err = projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s.Close()
	p, tables, err := s.GetProject(ctx, "acme")
	is.NoErr(err)
	is.Equal(p.Name, "Acme Inc")
	is.Equal(tables, 1)
	c, err := s.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	is.Equal(c.Role, projectdata.RoleAdmin)
	c, err = s.Authenticate(ctx, "acme", reader.Token)
	is.NoErr(err)
	is.Equal(c.Role, projectdata.RoleRead)
	toks, err := s.ListTokens(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(toks), 2)
}

func TestTwoStoresOnOneFolderAgree(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	a, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer a.Close()
	b, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer b.Close()

	_, _, err = a.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = b.CreateProject(ctx, "acme", "")
	pdtest.Code(t, err, projectdata.ErrProjectExists)

	tok, err := b.CreateToken(ctx, "acme", projectdata.NewToken{})
	is.NoErr(err)
	_, err = a.Authenticate(ctx, "acme", tok.Token) // a sees b's write
	is.NoErr(err)
	_, err = a.RevokeToken(ctx, "acme", tok.TokenID)
	is.NoErr(err)
	_, err = b.Authenticate(ctx, "acme", tok.Token) // b sees a's write
	pdtest.Code(t, err, projectdata.ErrInvalidToken)
	is.NoErr(a.Close())

	c, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer c.Close()
	toks, err := c.ListTokens(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(toks), 2)
	is.True(toks[1].RevokedAt != nil)
}

func TestManyProjectsWithFewOpen(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.Open(t, &projectdata.Options{MaxOpenProjects: 2})
	tokens := map[string]string{}
	for i := range 6 {
		slug := fmt.Sprintf("p%d", i)
		_, tok, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
		tokens[slug] = tok.Token
	}
	for round := range 3 {
		for i := range 6 {
			slug := fmt.Sprintf("p%d", i)
			_, err := s.Authenticate(ctx, slug, tokens[slug])
			is.NoErr(err)
			name := fmt.Sprintf("t%d", round)
			_, _, err = s.CreateTable(ctx, slug, projectdata.TableDef{Name: name})
			is.NoErr(err)
			_, n, err := s.GetProject(ctx, slug)
			is.NoErr(err)
			is.Equal(n, round+1)
		}
	}
	projects, err := s.ListProjects(ctx)
	is.NoErr(err)
	is.Equal(len(projects), 6)
}

func TestCloseWaitsForOperationsUnderWay(t *testing.T) {
	is := is.New(t)
	// No table: a table would be a change, whose log pruning would be an
	// operation under way of its own.
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`})
		done <- err
	}()
	for s.Stats().Operations == 0 { // the query is under way
		time.Sleep(time.Millisecond)
	}
	is.NoErr(s.Close())
	select {
	case err := <-done: // finished before Close returned, on open connections
		pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	default:
		t.Fatal("Close returned while a query was running")
	}
	_, _, err := s.GetProject(ctx, "acme")
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
}

func TestCopyingAProjectFolderMovesTheProject(t *testing.T) {
	is := is.New(t)
	src := t.TempDir()
	s, err := projectdata.Open(src, nil)
	is.NoErr(err)
	_, admin, err := s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "t", []projectdata.Row{{"v": "kept"}})
	is.NoErr(err)
	exp, err := s.CreateExport(ctx, "acme", "t", "csv")
	is.NoErr(err)
	is.NoErr(s.Close()) // checkpoints the WAL into the database file

	dst := t.TempDir()
	is.NoErr(os.CopyFS(filepath.Join(dst, "acme"), os.DirFS(filepath.Join(src, "acme"))))
	moved, err := projectdata.Open(dst, nil)
	is.NoErr(err)
	defer moved.Close()
	_, err = moved.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	row, err := moved.GetRecord(ctx, "acme", "t", 1)
	is.NoErr(err)
	is.Equal(row["v"], "kept")
	got, f, err := moved.OpenExport(ctx, "acme", exp.ID)
	is.NoErr(err)
	defer f.Close()
	is.Equal(got.SHA256, exp.SHA256)
}
