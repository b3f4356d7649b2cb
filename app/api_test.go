package app

import (
	"errors"
	"testing"
)

func TestReadiness(t *testing.T) {
	sick := errors.New("3 writes failed in a row")
	tests := []struct {
		name       string
		cfg        bool
		redis      error
		never      bool // Redis never reached since the start
		writer     error
		servesAPI  bool
		want       bool
		wantReason string
	}{
		{name: "all well", cfg: true, servesAPI: true, want: true},
		{name: "no config", cfg: false, servesAPI: true, wantReason: "no configuration loaded"},
		{name: "api process stays ready while Redis is down: it answers 503 itself", cfg: true, redis: sick, servesAPI: true, want: true},
		{name: "api process that never reached Redis (its own fault: a rollout's password) is not ready", cfg: true, redis: sick, never: true, servesAPI: true, wantReason: "redis unreachable"},
		{name: "worker process, Redis down", cfg: true, redis: sick, wantReason: "redis unreachable"},
		{name: "writer-only process, MySQL sick", cfg: true, writer: sick, wantReason: "order writer failing"},
		{name: "api process keeps taking reservations while MySQL is sick", cfg: true, writer: sick, servesAPI: true, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := readiness(tt.cfg, tt.redis, !tt.never, tt.writer, tt.servesAPI)
			if got != tt.want || reason != tt.wantReason {
				t.Fatalf("readiness = %v %q, want %v %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}
