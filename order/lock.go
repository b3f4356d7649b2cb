package order

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/lua"
)

// ErrLockBusy is returned when an (activity, user) lock stayed held by another holder for
// longer than the wait allowed. It is transient: the message comes again later.
var ErrLockBusy = errors.New("order: (activity, user) lock busy")

// lockKey is the compensator's lock on (activity, user): sk:lock:{<activity>:<user hash>}.
func lockKey(activity, userHash string) string {
	return keyspace.Prefix + "lock:{" + activity + ":" + userHash + "}"
}

// userLocks is a set of held (activity, user) locks, each with its own random token.
type userLocks struct {
	keys   []string
	tokens []string
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockUsers takes the locks of every distinct (activity, user hash) in msgs with SET NX PX,
// polling for up to wait while some are held elsewhere. On failure it releases what it took.
func lockUsers(ctx context.Context, rdb redis.UniversalClient, sc *scripts, msgs []Message, ttl, wait time.Duration) (*userLocks, error) {
	seen := map[string]bool{}
	var want []string
	for _, m := range msgs {
		k := lockKey(m.ActivityID, m.UserHash)
		if !seen[k] {
			seen[k] = true
			want = append(want, k)
		}
	}
	held := &userLocks{}
	deadline := time.Now().Add(wait)
	for {
		pipe := rdb.Pipeline()
		tokens := make([]string, len(want))
		cmds := make([]*redis.BoolCmd, len(want))
		for i, k := range want {
			tokens[i] = newToken()
			cmds[i] = pipe.SetNX(ctx, k, tokens[i], ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			// Some SETs may have succeeded: release those we can prove are ours.
			for i, c := range cmds {
				if c.Err() == nil && c.Val() {
					held.keys, held.tokens = append(held.keys, want[i]), append(held.tokens, tokens[i])
				}
			}
			held.release(context.WithoutCancel(ctx), rdb, sc)
			return nil, fmt.Errorf("order: lock: %w", err)
		}
		var rest []string
		for i, c := range cmds {
			if c.Val() {
				held.keys, held.tokens = append(held.keys, want[i]), append(held.tokens, tokens[i])
			} else {
				rest = append(rest, want[i])
			}
		}
		if len(rest) == 0 {
			return held, nil
		}
		if time.Now().After(deadline) {
			held.release(context.WithoutCancel(ctx), rdb, sc)
			return nil, fmt.Errorf("%w: %d of %d locks held elsewhere", ErrLockBusy, len(rest), len(want))
		}
		want = rest
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			held.release(context.WithoutCancel(ctx), rdb, sc)
			return nil, ctx.Err()
		}
	}
}

// release deletes each lock only if it still holds this holder's token (order_unlock.lua).
func (l *userLocks) release(ctx context.Context, rdb redis.UniversalClient, sc *scripts) error {
	if l == nil || len(l.keys) == 0 {
		return nil
	}
	calls := make([]lua.Call, len(l.keys))
	for i, k := range l.keys {
		calls[i] = lua.Call{Keys: []string{k}, Args: []any{l.tokens[i]}}
	}
	_, err := lua.RunMany(ctx, rdb, sc.unlock, calls)
	l.keys, l.tokens = nil, nil
	return err
}
