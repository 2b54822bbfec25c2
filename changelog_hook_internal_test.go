package projectdata

// WithChangeLogOff returns opts (or fresh Options) with the change log
// off, for the external tests' benchmarks that pair the log on and off.
func WithChangeLogOff(opts *Options) *Options {
	if opts == nil {
		opts = &Options{}
	}
	opts.changeLogOff = true
	return opts
}
