package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/projectdata/projectdata"
)

func tokenCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token create")
	data := fs.String("data", defaultDataDir, "data folder")
	role := fs.String("role", string(projectdata.RoleWrite), "role: admin, write or read")
	name := fs.String("name", "", "token name (default: api-token)")
	rest, err := parseFlags(fs, args, 1, stdout)
	if err != nil {
		return err
	}
	switch projectdata.Role(*role) {
	case projectdata.RoleAdmin, projectdata.RoleWrite, projectdata.RoleRead:
	default: // "" too: the Store would read it as the default
		return flagError(fs, "role", "want admin, write or read")
	}
	store, err := openExisting(*data)
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

// tokenListBlock is how many lines of token list are aligned together
// and printed at once.
const tokenListBlock = 256

// tokenList prints one line per token of a project: its metadata, never
// its secret (only its SHA-256 is stored). It prints as it reads (a
// project may hold many tokens: none is ever deleted), its columns aligned
// in blocks of tokenListBlock lines.
func tokenList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token list")
	data := fs.String("data", defaultDataDir, "data folder")
	rest, err := parseFlags(fs, args, 1, stdout)
	if err != nil {
		return err
	}
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer store.Close()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tCREATED\tEXPIRES\tREVOKED\tLAST_USED")
	lines := 1
	for t, err := range store.Tokens(ctx, rest[0]) {
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, listed(t.TokenName), listed(string(t.Role)), t.CreatedAt, orDash(t.ExpiresAt), orDash(t.RevokedAt), orDash(t.LastUsedAt))
		if lines++; lines%tokenListBlock == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return tw.Flush()
}

// tokenRevoke revokes a token by its id (from token list). A server running
// on the same data folder refuses it from its next request on.
func tokenRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token revoke")
	data := fs.String("data", defaultDataDir, "data folder")
	rest, err := parseFlags(fs, args, 2, stdout)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(rest[1], 10, 64)
	if err != nil {
		return usageErrorf("token revoke: TOKEN_ID must be a number from 'server token list', not %q", rest[1])
	}
	store, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer store.Close()
	tok, err := store.RevokeToken(ctx, rest[0], id)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "revoked token %d (%s, %s) at %s\n", tok.ID, listed(tok.TokenName), listed(string(tok.Role)), orDash(tok.RevokedAt))
	return err
}

// orDash prints a timestamp that may be absent.
func orDash(t *projectdata.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.String()
}
