// Package python holds the Go side of drover's Python trainer client
// (clients/python/drover): its tests run the client's own unittest suite
// with python3 and check that it writes byte for byte the patch that Go's
// report.Patch writes, so that `go test ./...` (and `make test`) covers
// the client.
package python
