// Package integration holds the tests that need real external tools:
// Litestream (replication) and versitygw (an S3-compatible server over a
// local folder). It is a module of its own, so that an application
// importing projectdata never inherits these tools or their dependencies.
//
// The tests build the pinned tools with `go install pkg@version` into a
// cache folder (PROJECTDATA_TOOLS, or the user cache folder), once:
//
//	cd integration && go test ./...
//
// The first run downloads and builds both (about a minute each); later runs
// reuse the binaries. The tests run on Unix systems only: they stop and
// kill the tools and the server with signals.
package integration
