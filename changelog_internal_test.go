package projectdata

// Every test of the package checks that each unit of work logs exactly the
// application rows SQLite changed (see verifyChangeLog).
func init() { verifyChangeLog = true }
