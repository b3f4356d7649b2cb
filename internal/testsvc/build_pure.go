//go:build !integration

package testsvc

// Integration is false without -tags integration: plain go test ./... runs only the pure tests,
// and a test that asks for a server fails, telling where it belongs.
const Integration = false
