// Package sim has only tests: a seeded simulation of the reservation protocol on the real test
// Redis (see sim_test.go). They carry the integration build tag: go test -tags integration ./internal/sim/.
package sim
