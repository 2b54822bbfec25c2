//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockReplication takes the lock that lets one server at a time replicate
// the data folder dir (absolute): an exclusive flock on
// .litestream/serve.lock, held while the returned file stays open. A
// second serve -replica on the folder would rewrite the first one's
// Litestream configuration, take over its control socket and run a second
// Litestream on the same databases.
func lockReplication(dir string) (*os.File, error) {
	state := filepath.Join(dir, litestreamStateName)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("create litestream state folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(state, "serve.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another server already replicates data folder %s (it holds %s); stop it first, or serve another folder", dir, f.Name())
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}
