//go:build unix

package projectdata

import "syscall"

// openNoFollow opens without following a final symbolic link (ELOOP), and
// without blocking on a FIFO put in a file's place.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// errIsLink is the error of opening a symbolic link with openNoFollow.
var errIsLink error = syscall.ELOOP
