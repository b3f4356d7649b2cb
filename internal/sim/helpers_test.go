//go:build integration

package sim

import (
	"io"
	"log/slog"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// settleHook finishes what the protocol leaves to the background: transfers in transit.
func settleHook(s *sim) {
	if _, err := s.store.Recover(s.ctx, s.aid, 0); err != nil {
		s.logf("settle recover: %v", err)
	}
}
