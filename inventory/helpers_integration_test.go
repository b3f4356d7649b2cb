//go:build integration

package inventory

import "github.com/seckill/seckill/internal/testsvc"

// serverBackends are the real Redis servers the suite runs against under -tags integration.
func serverBackends() []backend {
	return []backend{
		{"standalone", testsvc.Redis},
		{"cluster", testsvc.RedisCluster},
	}
}
