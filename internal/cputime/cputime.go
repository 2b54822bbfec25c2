// Package cputime reads the CPU time the process has used, for benchmarks
// that compare two workloads measured in turns on a shared machine: the
// CPU time each side used is steadier than the wall time it took.
package cputime
