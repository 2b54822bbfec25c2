//go:build !linux

package main

import "syscall"

// childProcAttr has nothing to add where the kernel cannot signal a child
// when its parent dies: stop the server gracefully so that it stops
// Litestream.
func childProcAttr() *syscall.SysProcAttr { return nil }
