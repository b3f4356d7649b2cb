package inventory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/seckill/seckill/keyspace"
)

func tokenKey(activityID, token string) string {
	sum := sha256.Sum256([]byte(token))
	return Token(activityID, hex.EncodeToString(sum[:16]))
}

// IssueToken makes a one-time grab token bound to (user, activity) that expires after ttl.
// Only its hash reaches a key name.
func (s *Store) IssueToken(ctx context.Context, activityID, userID string, ttl time.Duration) (string, time.Time, error) {
	if !keyspace.ValidActivityID(activityID) || userID == "" || ttl <= 0 {
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

// ConsumeToken uses up a grab token: true once, for the user and activity it was issued
// to; false for a missing, expired, foreign or already used token.
func (s *Store) ConsumeToken(ctx context.Context, activityID, userID, token string) (bool, error) {
	if !keyspace.ValidActivityID(activityID) || userID == "" || token == "" || len(token) > 256 {
		return false, nil
	}
	res, err := s.run(ctx, s.token, []string{tokenKey(activityID, token)}, s.UserHash(userID))
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
	tokenConsumed             // 1: the token is used up now
	tokenMissing              // 0: missing, expired, bound to another user or used before
)
