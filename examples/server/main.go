// Command server runs the projectdata HTTP API and manages its data folder.
//
//	server serve [-addr 127.0.0.1:8080] [-data ./data] [-replica URL]
//	server project create [-data DIR] [-name NAME] SLUG
//	server project restore [-data DIR] -from SNAPSHOT|REPLICA_URL [-at TIME] SLUG
//	server token create [-data DIR] [-role admin|write|read] [-name NAME] SLUG
//
// Run with no subcommand, it serves and, when the data folder holds no
// project, creates project "demo" and prints its admin token once.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/projectdata/projectdata"
)

const defaultDataDir = "./data"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run dispatches a command line; stdout gets only what the command prints
// for its caller (a token), diagnostics go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		return serve(ctx, args, stdout, stderr, true)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr, false)
	case "project":
		if len(args) >= 2 && args[1] == "restore" {
			return projectRestore(ctx, args[2:], stdout, stderr)
		}
		if len(args) < 2 || args[1] != "create" {
			return fmt.Errorf("usage: server project create [-data DIR] [-name NAME] SLUG")
		}
		return projectCreate(ctx, args[2:], stdout, stderr)
	case "token":
		if len(args) < 2 || args[1] != "create" {
			return fmt.Errorf("usage: server token create [-data DIR] [-role admin|write|read] [-name NAME] SLUG")
		}
		return tokenCreate(ctx, args[2:], stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q (want serve, project create or token create)", args[0])
	}
}

func projectCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", defaultDataDir, "data folder")
	name := fs.String("name", "", "display name (default: the slug)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("usage: server project create [-data DIR] [-name NAME] SLUG")
	}
	store, err := projectdata.Open(*data, nil)
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

func tokenCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", defaultDataDir, "data folder")
	role := fs.String("role", string(projectdata.RoleWrite), "role: admin, write or read")
	name := fs.String("name", "", "token name")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("usage: server token create [-data DIR] [-role admin|write|read] [-name NAME] SLUG")
	}
	store, err := projectdata.Open(*data, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	tok, err := store.CreateToken(ctx, rest[0], projectdata.NewToken{Name: *name, Role: projectdata.Role(*role)})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok.Token)
	return err
}

// parseInterspersed parses flags wherever they stand among the arguments
// (flag stops at the first argument that is not one) and returns the
// others, in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
