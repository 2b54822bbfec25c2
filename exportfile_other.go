//go:build !unix

package projectdata

import "errors"

// openNoFollow is 0 where the system has no O_NOFOLLOW; the file's mode is
// still checked after opening.
const openNoFollow = 0

// errIsLink is never returned where openNoFollow is 0.
var errIsLink = errors.New("symbolic link")
