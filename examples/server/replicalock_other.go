//go:build !unix

package main

import "os"

// lockReplication takes no lock where flock(2) is missing: run one
// serve -replica at a time on a data folder.
func lockReplication(dir string) (*os.File, error) { return nil, nil }
