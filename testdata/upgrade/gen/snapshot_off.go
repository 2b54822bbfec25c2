//go:build !snapshot

package main

import (
	"context"

	"github.com/projectdata/projectdata"
)

// snapshot: the release has no project exports.
func snapshot(context.Context, *projectdata.Store, string, string) string { return "" }
