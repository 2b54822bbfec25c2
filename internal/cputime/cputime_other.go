//go:build !unix

package cputime

import "time"

// Process is zero where the process's CPU time is not read.
func Process() time.Duration { return 0 }
