package inventory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/keyspace"
)

func tokenKey(activityID, token string) string {
	sum := sha256.Sum256([]byte(token))
	return Token(activityID, hex.EncodeToString(sum[:16]))
}

// IssueToken makes a one-time grab token bound to (user, activity) that expires after ttl.
// Only its hash reaches a key name.
func (s *Store) IssueToken(ctx context.Context, activityID, userID string, ttl time.Duration) (string, time.Time, error) {
	if !keyspace.ValidName(activityID) || userID == "" || ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("%w: token request", ErrInvalid)
	}
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, err
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	exp := time.Now().Add(ttl)
	if err := s.rdb.Set(ctx, tokenKey(activityID, tok), s.UserHash(userID), ttl).Err(); err != nil {
		return "", time.Time{}, fmt.Errorf("inventory: issue token: %w", err)
	}
	return tok, exp, nil
}

// CountTokenMint counts one more grab token minted by the user for the activity within a
// window (the token lifetime, started by the user's first token) and returns the count so
// far and how long until the window ends. The caller compares the count with its cap.
func (s *Store) CountTokenMint(ctx context.Context, activityID, userID string, window time.Duration) (int64, time.Duration, error) {
	if !keyspace.ValidName(activityID) || userID == "" || window <= 0 {
		return 0, 0, fmt.Errorf("%w: token count request", ErrInvalid)
	}
	k := TokenCount(activityID, s.UserHash(userID))
	var n *redis.IntCmd
	var ttl *redis.DurationCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Incr(ctx, k)
		p.ExpireNX(ctx, k, window)
		ttl = p.PTTL(ctx, k)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("inventory: count grab tokens: %w", err)
	}
	return n.Val(), ttl.Val(), nil
}

// ConsumeToken uses up a grab token for the reservation of idempotency key idem: true once,
// for the user and activity it was issued to; false for a missing, expired, foreign or already
// used token. ReturnToken gives it back.
func (s *Store) ConsumeToken(ctx context.Context, activityID, userID, token, idem string) (bool, error) {
	return s.tokenOp(ctx, "use", activityID, userID, token, idem)
}

// ReturnToken gives back a grab token ConsumeToken used for the reservation of key idem, which
// the reservation script refused (a rate limit) or a recovering activity did not run: the
// buyer retries with it until it expires as it would have. True when it was given back.
func (s *Store) ReturnToken(ctx context.Context, activityID, userID, token, idem string) (bool, error) {
	return s.tokenOp(ctx, "return", activityID, userID, token, idem)
}

func (s *Store) tokenOp(ctx context.Context, op, activityID, userID, token, idem string) (bool, error) {
	if !keyspace.ValidName(activityID) || userID == "" || token == "" || len(token) > 256 {
		return false, nil
	}
	sum := sha256.Sum256([]byte(idem))
	res, err := s.run(ctx, s.token, []string{tokenKey(activityID, token)}, op, s.UserHash(userID), hex.EncodeToString(sum[:8]))
	if err != nil {
		return false, err
	}
	c, err := answer(s.token, res, tokenMissing, tokenConsumed)
	return c == tokenConsumed, err
}

// tokenAnswer is the result of inventory_token.lua. The zero value is unknown.
type tokenAnswer int

const (
	tokenUnknown  tokenAnswer = iota
	tokenConsumed             // 1: used now (or given back)
	tokenMissing              // 0: missing, expired, bound to another user or used before (not used by that reservation)
)
