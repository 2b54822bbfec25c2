module github.com/projectdata/projectdata/integration

go 1.26.0

require (
	github.com/matryer/is v1.4.1
	github.com/ncruces/go-sqlite3 v0.35.6
	github.com/projectdata/projectdata v0.0.0
)

require (
	github.com/ncruces/go-sqlite3-wasm/v6 v6.3.35304 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/projectdata/projectdata => ../
