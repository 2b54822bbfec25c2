package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/projectdatatest"
)

func TestRunAgainstAServer(t *testing.T) {
	is := is.New(t)
	s := projectdatatest.NewStore(t)
	slug, admin := projectdatatest.NewProject(t, s)
	srv := httptest.NewServer(httpapi.New(s, nil))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	for i, first := range []string{"created table orders", "table orders exists"} {
		var out bytes.Buffer
		is.NoErr(run(context.Background(), &out, c, slug))
		is.True(strings.HasPrefix(out.String(), first+"\n"))
		is.True(strings.Contains(out.String(), "errors.Is ErrRecordNotFound: true"))
		is.True(strings.Contains(out.String(), "query: "+[]string{"1", "2"}[i]+" rows")) // plum each time
	}
}
