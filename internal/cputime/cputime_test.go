package cputime

import (
	"runtime"
	"testing"
	"time"
)

func TestProcessGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("not read on", runtime.GOOS)
	}
	start := Process()
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
	}
	if Process() <= start {
		t.Fatalf("CPU time did not grow over 20 ms of work: %v then %v", start, Process())
	}
}
