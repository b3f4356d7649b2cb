package order

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/keyspace"
)

// ErrLockBusy is returned when an (activity, user) lock stayed held by another holder for
// longer than the wait allowed. It is transient: the message comes again later.
var ErrLockBusy = errors.New("order: (activity, user) lock busy")

// lockKey is the compensator's lock on (activity, user): sk:lock:{<activity>:<user hash>}.
func lockKey(activity, userHash string) string {
	return keyspace.Prefix + "lock:{" + activity + ":" + userHash + "}"
}

// userLock is a held (activity, user) lock with its random token.
type userLock struct {
	key, token string
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockUser takes the lock of (activity, user hash) with SET NX PX, polling for up to wait
// while it is held elsewhere (ErrLockBusy after that). A SET that failed proves nothing
// held: the lock, if it was set, expires after ttl.
func lockUser(ctx context.Context, rdb redis.UniversalClient, activity, userHash string, ttl, wait time.Duration) (*userLock, error) {
	l := &userLock{key: lockKey(activity, userHash), token: newToken()}
	deadline := time.Now().Add(wait)
	for {
		ok, err := rdb.SetNX(ctx, l.key, l.token, ttl).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("order: lock: %w", err)
		}
		if ok {
			return l, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s held elsewhere", ErrLockBusy, l.key)
		}
		if err := backoff.Sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// release deletes the lock only if it still holds this holder's token (order_unlock.lua).
func (l *userLock) release(ctx context.Context, rdb redis.UniversalClient, sc *scripts) error {
	return sc.unlock.Run(ctx, rdb, []string{l.key}, l.token).Err()
}
