package projectdata

// Hooks for the external registry tests (registry_test.go).

// Every test of the package checks that each schema change leaves the
// registry it would load whole (see verifyRegistryEdits).
func init() { verifyRegistryEdits = true }

// RegistryLoads returns how many times a registry was loaded whole, by
// every Store of the process.
func RegistryLoads() int64 { return registryLoads.Load() }
