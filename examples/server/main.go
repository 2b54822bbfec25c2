// Command server runs the projectdata HTTP API and manages its data folder.
//
//	server serve [-addr 127.0.0.1:8080] [-data ./data] [-metrics=false] [-max-conns N]
//	             [-replica URL] [-litestream BIN] [-shutdown-delay DURATION]
//	             [-stop-timeout 25s] [-drain DURATION] [-limit NAME=VALUE]...
//	server project create [-data DIR] [-name NAME] SLUG
//	server project list [-data DIR]
//	server project restore [-data DIR] -from SNAPSHOT|REPLICA_URL [-at TIME] [-litestream BIN] SLUG
//	server project sync [-data DIR] [-timeout 1m] SLUG
//	server token create [-data DIR] [-role admin|write|read] [-name NAME] SLUG
//	server token list [-data DIR] SLUG
//	server token revoke [-data DIR] SLUG TOKEN_ID
//	server version (or --version)
//	server help [COMMAND]
//
// Run with no subcommand, it serves and, when the data folder holds no
// project, creates project "demo" and prints its admin token once, after
// the listener is bound. Only serve creates a data folder that does not
// exist.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

const defaultDataDir = "./data"

// command is one subcommand: its name (one or two words), the synopsis of
// its flags and arguments (every flag, then the arguments' names), one
// line for help, and what runs it. stdout gets only what the command
// prints for its caller (a token, a list); diagnostics go to stderr.
type command struct {
	name, synopsis, summary string
	run                     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are the subcommands, in the order help lists them. Adding one
// is one line here and its function in a file of its own. (Set in init:
// the commands' usage messages read the table.)
var commands []command

func init() {
	commands = []command{
		{"serve", "[-addr ADDR] [-data DIR] [-metrics=false] [-max-conns N] [-replica URL] [-litestream BIN] [-shutdown-delay DURATION] [-stop-timeout DURATION] [-drain DURATION] [-limit NAME=VALUE]...", "serve the HTTP API until SIGINT, SIGTERM or SIGHUP", runServe},
		{"project create", "[-data DIR] [-name NAME] SLUG", "create a project; print its first admin token", projectCreate},
		{"project list", "[-data DIR]", "list the projects", projectList},
		{"project restore", "[-data DIR] -from SNAPSHOT|REPLICA_URL [-at TIME] [-litestream BIN] SLUG", "restore a project from a snapshot file or a Litestream replica", projectRestore},
		{"project sync", "[-data DIR] [-timeout 1m] SLUG", "wait until the replica of a server serving with -replica holds every commit of a project", projectSync},
		{"token create", "[-data DIR] [-role admin|write|read] [-name NAME] SLUG", "create a token; print its secret", tokenCreate},
		{"token list", "[-data DIR] SLUG", "list a project's tokens (never their secrets)", tokenList},
		{"token revoke", "[-data DIR] SLUG TOKEN_ID", "revoke a token; a running server refuses it at once", tokenRevoke},
		{"version", "", "print the module version and VCS revision", version},
		{"help", "[COMMAND]", "print this help, or a command's", nil}, // run by dispatch
	}
}

func main() {
	ctx := signalContext()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var usage *usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	case ctx.Err() != nil:
		// Stopped by a signal, after the command's own clean-up ran; a
		// context.Canceled adds nothing to saying so.
		msg := fmt.Sprintf("stopped by %v", context.Cause(ctx))
		if !errors.Is(err, context.Canceled) {
			msg += ": " + err.Error()
		}
		fmt.Fprintln(os.Stderr, "server:", msg)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// stopSignals are the signals that stop a command, by name: SIGHUP too,
// which a closed terminal or SSH session sends.
var stopSignals = map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}

// signalContext returns a context that the first of stopSignals ends,
// with the signal's name as its cause: every command stops through its
// context, so that its deferred clean-up runs (serve drains and stops).
// The signals get their default effect back before the context ends, so a
// second one ends the process at once.
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	for sig := range stopSignals {
		signal.Notify(sigs, sig)
	}
	go func() {
		sig := <-sigs
		signal.Stop(sigs)
		cancel(errors.New(stopSignals[sig]))
	}()
	return ctx
}

// run runs a command line; a usage shown on request (-h) is a success.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := dispatch(ctx, args, stdout, stderr); !errors.Is(err, errHelpShown) {
		return err
	}
	return nil
}

// dispatch runs the command that args name. With no command (or only
// flags) it serves and bootstraps an empty data folder.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
		return version(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpFlag(args[0]) {
		return serve(ctx, args, stdout, stderr, true)
	}
	if isHelpFlag(args[0]) {
		return help(ctx, args[1:], stdout, stderr)
	}
	c, rest, ok := lookup(args)
	switch {
	case ok && c.run == nil:
		return help(ctx, rest, stdout, stderr)
	case ok:
		return c.run(ctx, rest, stdout, stderr)
	}
	return usageErrorf("unknown command %q; run 'server help' for the list", strings.Join(args[:min(len(args), 2)], " "))
}

// lookup finds the command that args start with, and returns the rest.
func lookup(args []string) (command, []string, bool) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, args[len(words):], true
		}
	}
	return command{}, nil, false
}

func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// help prints every command, or one command's usage and flags.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] != "help" {
		c, _, ok := lookup(args)
		switch {
		case !ok:
			return usageErrorf("unknown command %q; run 'server help' for the list", strings.Join(args, " "))
		}
		return c.run(ctx, []string{"-h"}, stdout, stderr)
	}
	fmt.Fprint(stdout, "server runs the projectdata HTTP API and manages its data folder.\n\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(stdout, "  %s\n", strings.TrimSpace("server "+c.name+" "+c.synopsis))
		fmt.Fprintf(stdout, "      %s\n", c.summary)
	}
	_, err := fmt.Fprint(stdout, "\nWith no command, server serves and, when the data folder holds no project,\n"+
		"creates project demo and prints its admin token once.\n"+
		"Run 'server help COMMAND' or 'server COMMAND -h' for a command's flags.\n")
	return err
}

// usageError is a command line that cannot run as given: main reports it
// once and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// newFlags returns the flag set of the command name. It prints nothing
// itself: parseFlags reports its errors once.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// errHelpShown ends a command whose usage was asked for (-h) and printed.
var errHelpShown = errors.New("help shown")

// parseFlags parses the command's flags wherever they stand among its
// arguments and returns the other arguments, in order, checking there are
// nargs of them (-1: any number). -h prints the command's usage and flags
// on stdout.
func parseFlags(fs *flag.FlagSet, args []string, nargs int, stdout io.Writer) ([]string, error) {
	var rest []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, stdout)
			return nil, errHelpShown
		}
		if err != nil {
			return nil, usageErrorf("%s: %v (run 'server %s -h')", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if data := fs.Lookup("data"); data != nil && data.Value.String() == "" {
		// Every command's -data: "" names no folder (os.Stat says it does
		// not exist, Open that it is empty).
		return nil, flagError(fs, "data", "want a folder, such as "+defaultDataDir)
	}
	if nargs >= 0 && len(rest) != nargs {
		if len(rest) > nargs {
			return nil, usageErrorf("%s: unexpected argument %q; %s", fs.Name(), rest[nargs], usageLine(fs.Name()))
		}
		words := strings.Fields(synopsisOf(fs.Name())) // ending with the arguments' names
		return nil, usageErrorf("%s: missing %s; %s", fs.Name(), strings.Join(words[len(words)-nargs+len(rest):], " "), usageLine(fs.Name()))
	}
	return rest, nil
}

// flagError reports a flag whose value parses but cannot be used, as the
// flag package reports one that does not parse.
func flagError(fs *flag.FlagSet, name, reason string) error {
	return usageErrorf("%s: invalid value %q for flag -%s: %s (run 'server %s -h')", fs.Name(), fs.Lookup(name).Value.String(), name, reason, fs.Name())
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintln(w, usageLine(fs.Name()))
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if fs.Lookup("limit") != nil {
		printServiceLimits(w)
	}
}

// usageLine is "usage: server COMMAND SYNOPSIS".
func usageLine(name string) string {
	return strings.TrimSpace("usage: server " + name + " " + synopsisOf(name))
}

func synopsisOf(name string) string {
	for _, c := range commands {
		if c.name == name {
			return c.synopsis
		}
	}
	return ""
}
