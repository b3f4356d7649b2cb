package inventory

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Replay returns the reservation a user's idempotency key is bound to, reading the user's
// home shard of the current layout (the binding lives in the shard's users hash, field
// idemField) and taking nothing: ("", false, nil) when the key is not bound. One hash read;
// the caller answers a safe retry without spending anything (a one-time grab token, a
// sold-out answer).
func (s *Store) Replay(ctx context.Context, activityID, userID, key string) (string, bool, error) {
	if key == "" || userID == "" {
		return "", false, nil
	}
	e, err := s.entryFor(ctx, activityID)
	if err != nil {
		return "", false, err
	}
	uh := s.UserHash(userID)
	l := e.layout.Load()
	k := l.keys[HomeShard(uh, l.shards)]
	v, err := s.rdb.HGet(ctx, k.Users(), idemField(uh, key)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("inventory: read idempotency key: %w", err)
	}
	if v == "" {
		return "", false, nil
	}
	if err := s.durableRead(ctx, k); err != nil {
		return "", false, err
	}
	e.noteReplayed(v) // answered 202 by this instance now, whatever became of the first answer
	return v, true, nil
}

// durableRead makes sure that what a read of shard k answered (an idempotency binding, so
// a replayed reservation) is on Durability.Replicas replicas before the caller answers for
// it: the reservation that made the binding may be the one whose WAIT fell short. A write
// to the shard's stats (HINCRBY replays) followed by WAIT on the same connection: WAIT then
// covers every earlier write of that master, the binding's included. Nothing in mode none.
func (s *Store) durableRead(ctx context.Context, k ShardKeys) error {
	d := s.opts.Durability
	if d.Replicas <= 0 {
		return nil
	}
	err := d.Acked(ctx, s.rdb, k.Stats(), func(p redis.Pipeliner) { p.HIncrBy(ctx, k.Stats(), "replays", 1) })
	if err != nil {
		return fmt.Errorf("inventory: replayed reservation: %w", err)
	}
	return nil
}
