package load

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/cmd/seckill-load/scenario"
)

func TestRunRefusesRemoteTargetBeforeSendingAnything(t *testing.T) {
	// No server listens: the refusal must come from validation, not from a failed dial.
	_, err := Run(context.Background(), scenario.Config{
		Targets: []string{"http://127.0.0.1:1", "http://203.0.113.7:8080"}, Activity: "a1",
		Users: 1, MaxRequests: 1,
	})
	if err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Fatalf("Run with a remote target: %v, want a refusal", err)
	}
}
