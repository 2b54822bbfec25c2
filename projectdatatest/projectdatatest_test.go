package projectdatatest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/projectdatatest"
)

func TestNewStoreIsClosedAtCleanup(t *testing.T) {
	is := is.New(t)
	var store *projectdata.Store
	t.Run("Inner", func(t *testing.T) {
		store = projectdatatest.NewStore(t)
		is.True(!store.Closed())
	})
	is.True(store.Closed())
}

func TestNewProjectGivesAWorkingAdminToken(t *testing.T) {
	is := is.New(t)
	store := projectdatatest.NewStore(t)
	slug, admin := projectdatatest.NewProject(t, store)
	is.Equal(slug, "testnewprojectgivesaworkingadmintoken")
	c, err := store.Authenticate(context.Background(), slug, admin)
	is.NoErr(err)
	is.Equal(c.Role, projectdata.RoleAdmin)

	srv := httptest.NewServer(httpapi.New(store, nil))
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+"/projects/"+slug, nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := srv.Client().Do(req)
	is.NoErr(err)
	res.Body.Close()
	is.Equal(res.StatusCode, 200)
}

func TestNewProjectSlugs(t *testing.T) {
	store := projectdatatest.NewStore(t)
	t.Run("Second project of a test/Gets a suffix", func(t *testing.T) {
		is := is.New(t)
		first, _ := projectdatatest.NewProject(t, store)
		second, _ := projectdatatest.NewProject(t, store)
		is.Equal(first, "testnewprojectslugs-second-project-of-a-test-gets-a-suffix")
		is.Equal(second, first+"-2")
	})
	t.Run(strings.Repeat("Long_name", 10), func(t *testing.T) {
		is := is.New(t)
		a, _ := projectdatatest.NewProject(t, store)
		b, _ := projectdatatest.NewProject(t, store)
		is.True(len(a) <= 63)
		is.True(len(b) <= 63)
		is.True(strings.HasSuffix(b, "-2"))
		is.True(a != b)
	})
	t.Run("ÜñíçødéOnly", func(t *testing.T) {
		is := is.New(t)
		slug, _ := projectdatatest.NewProject(t, store)
		is.Equal(slug, "testnewprojectslugs-d-only")
	})
}

func TestNewStoreIsInATemporaryFolder(t *testing.T) {
	is := is.New(t)
	wd, err := os.Getwd()
	is.NoErr(err)
	before, err := os.ReadDir(wd)
	is.NoErr(err)
	store := projectdatatest.NewStore(t)
	projectdatatest.NewProject(t, store)
	after, err := os.ReadDir(wd)
	is.NoErr(err)
	is.Equal(len(after), len(before)) // nothing written beside the test
}
