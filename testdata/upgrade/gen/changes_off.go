//go:build !changes

package main

import (
	"context"

	"github.com/projectdata/projectdata"
)

// changes: the release has no change log.
func changes(context.Context, *projectdata.Store, string) any { return nil }
