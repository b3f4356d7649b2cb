//go:build integration

package testsvc

// Integration is true in a test binary built with -tags integration (make test): only such a
// binary may use the real servers.
const Integration = true
