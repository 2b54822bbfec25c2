//go:build !race

package projectdata_test

// raceEnabled is true under the race detector, where SQLite runs about 15
// times slower: tests with many rows use fewer.
const raceEnabled = false
