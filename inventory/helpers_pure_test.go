//go:build !integration

package inventory

// serverBackends is empty without the integration build tag: plain go test runs the suite on
// miniredis only, and needs no server.
func serverBackends() []backend { return nil }
