package main

import "syscall"

// childProcAttr makes the kernel send the Litestream child SIGTERM when the
// server dies, so that no orphan keeps replicating beside the next server:
// two Litestream processes on one database would both write its replica.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
