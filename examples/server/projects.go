package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/projectdata/projectdata"
)

// openExisting opens the Store over a data folder that must exist: only
// serve creates one.
func openExisting(dir string) (*projectdata.Store, error) {
	info, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return nil, fmt.Errorf("data folder %s does not exist (serve creates it; or pass -data)", dir)
	case err != nil:
		return nil, err
	case !info.IsDir():
		return nil, fmt.Errorf("data folder %s is not a folder", dir)
	}
	return projectdata.Open(dir, nil)
}

func projectCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("project create")
	data := fs.String("data", defaultDataDir, "data folder")
	name := fs.String("name", "", "display name (default: the slug)")
	rest, err := parseFlags(fs, args, 1, stdout)
	if err != nil {
		return err
	}
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer store.Close()
	_, tok, err := store.CreateProject(ctx, rest[0], *name)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok.Token)
	return err
}

// projectList prints one line per project: slug, name, creation time. A
// project that cannot be read does not hide the others: they are listed,
// and the command fails with the error that names each one that could not
// be read.
func projectList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("project list")
	data := fs.String("data", defaultDataDir, "data folder")
	if _, err := parseFlags(fs, args, 0, stdout); err != nil {
		return err
	}
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer store.Close()
	projects, listErr := store.ListProjects(ctx)
	if listErr != nil && len(projects) == 0 {
		return listErr
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tNAME\tCREATED")
	for _, p := range projects {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Slug, listed(p.Name), p.CreatedAt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return listErr
}

// listed is a name (of a project, of a token) as the command line prints
// it: as it is, or quoted with strconv.Quote when a terminal would not
// show it as stored: control characters (a newline forges a row, an
// escape sequence drives the terminal), other invisible characters,
// invalid UTF-8, white space at either end, or a leading quote. One row is
// always one line.
func listed(name string) string {
	if name != "" && utf8.ValidString(name) && strings.TrimSpace(name) == name && !strings.HasPrefix(name, `"`) &&
		!strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return name
	}
	return strconv.Quote(name)
}
