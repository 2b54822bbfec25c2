package projectdata

// Hooks for the external tests' benchmarks that pair the change log on
// and off (changelog_http_bench_test.go).

// WithChangeLogOff returns opts (or fresh Options) with the change log
// off.
func WithChangeLogOff(opts *Options) *Options {
	if opts == nil {
		opts = &Options{}
	}
	opts.changeLogOff = true
	return opts
}

// VerifyChangeLogOff turns verifyChangeLog off for the Stores opened until
// the returned func turns it back on: production does not run its update
// hook, which would slow both sides of a benchmark.
func VerifyChangeLogOff() (restore func()) {
	verifyChangeLog = false
	return func() { verifyChangeLog = true }
}
