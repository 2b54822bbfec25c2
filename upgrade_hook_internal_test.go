package projectdata

import "time"

// Hook for the external upgrade tests (upgrade_test.go).

// MigrateTo brings the control schema of the project database at path to
// version and stops there, as an upgrade interrupted between two versions'
// transactions leaves it.
func MigrateTo(path string, version int) error {
	c, err := openConn(path, false, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	return migrateTo(c, version)
}
