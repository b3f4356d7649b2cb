package inventory

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func mustHasher(t testing.TB, key []byte) *Hasher {
	t.Helper()
	h, err := NewHasher(key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestUserHashIsKeyed: the user hash is 128 bits of lowercase hex that depend on the key, so
// nobody without the key can pick an id whose hash equals another user's.
func TestUserHashIsKeyed(t *testing.T) {
	k1 := bytes.Repeat([]byte{1}, MinUserHashKey)
	k2 := bytes.Repeat([]byte{2}, MinUserHashKey)
	h1, h1again, h2 := mustHasher(t, k1), mustHasher(t, k1), mustHasher(t, k2)
	seen := map[string]string{}
	for i := 0; i < 1000; i++ {
		id := fmt.Sprint("user-", i)
		a, b := h1.UserHash(id), h2.UserHash(id)
		if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
			t.Fatalf("UserHash(%q) = %q, want 32 lowercase hex digits", id, a)
		}
		if a == b {
			t.Fatalf("UserHash(%q) = %q under two keys", id, a)
		}
		if c := h1again.UserHash(id); c != a {
			t.Fatalf("UserHash(%q) = %q and %q under one key", id, a, c)
		}
		if prev, ok := seen[a]; ok {
			t.Fatalf("%q and %q share the hash %s", prev, id, a)
		}
		seen[a] = id
		if !ValidUserHash(a) {
			t.Fatalf("ValidUserHash(%q) = false", a)
		}
	}
	// The hash is not the unkeyed FNV-1a 64 of the id (the hash of earlier releases).
	f := fnv.New64a()
	f.Write([]byte("alice"))
	if old := fmt.Sprintf("%016x", f.Sum64()); strings.HasPrefix(h1.UserHash("alice"), old) {
		t.Fatalf("keyed hash %s starts with the FNV-1a hash %s", h1.UserHash("alice"), old)
	}
	if _, err := NewHasher(k1[:MinUserHashKey-1]); err == nil {
		t.Fatal("NewHasher took a 31-byte key")
	}
	// The hasher copies its key: changing the caller's slice changes nothing.
	want := h1.UserHash("bob")
	k := bytes.Clone(k1)
	h3 := mustHasher(t, k)
	k[0] ^= 0xff
	if got := h3.UserHash("bob"); got != want {
		t.Fatalf("hash changed with the caller's key slice: %s, want %s", got, want)
	}
}

// TestUserHashConcurrent: one Hasher shared by many goroutines answers as a fresh one does.
func TestUserHashConcurrent(t *testing.T) {
	key := bytes.Repeat([]byte{3}, MinUserHashKey)
	shared := mustHasher(t, key)
	errs := make(chan string, 8)
	rush(8, func(g int) {
		ref := mustHasher(t, key)
		for i := 0; i < 500; i++ {
			id := fmt.Sprint(g, "-", i, strings.Repeat("x", i%40))
			if got, want := shared.UserHash(id), ref.UserHash(id); got != want {
				errs <- fmt.Sprintf("%q: %s, want %s", id, got, want)
				return
			}
		}
	})
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestUserHashAllocatesOnlyTheResult: on the hot path a pooled hash state makes a user hash
// with one allocation (the string). The state is tested directly: under the race detector
// sync.Pool drops pooled items at random.
func TestUserHashAllocatesOnlyTheResult(t *testing.T) {
	h := mustHasher(t, bytes.Repeat([]byte{4}, MinUserHashKey))
	st := h.pool.Get().(*hashState)
	if got, want := st.hash("user-12345"), h.UserHash("user-12345"); got != want {
		t.Fatalf("state hash %s, hasher %s", got, want)
	}
	if n := testing.AllocsPerRun(200, func() { st.hash("user-12345") }); n > 1 {
		t.Fatalf("UserHash allocates %v times per call, want 1", n)
	}
}

func TestValidUserHash(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{strings.Repeat("a1", 16), true},
		{"00000000000000ff", true}, // FNV-1a 64 of an earlier release
		{strings.Repeat("a", 31), false},
		{strings.Repeat("a", 33), false},
		{strings.Repeat("A", 32), false},
		{strings.Repeat("g", 32), false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ValidUserHash(tt.give); got != tt.want {
			t.Errorf("ValidUserHash(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestHomeShardOfUserHash: the home shard is the first 64 bits of the hash modulo n, for
// the 128-bit hash and for the 64-bit one of earlier releases alike.
func TestHomeShardOfUserHash(t *testing.T) {
	tests := []struct {
		give string
		n    int
		want int
	}{
		{"0000000000000005" + strings.Repeat("f", 16), 4, 1},
		{"0000000000000005", 4, 1},
		{"ffffffffffffffff" + strings.Repeat("0", 16), 7, int(^uint64(0) % 7)},
		{"zz", 4, 0},
		{strings.Repeat("1", 32), 0, 0},
	}
	for _, tt := range tests {
		if got := HomeShard(tt.give, tt.n); got != tt.want {
			t.Errorf("HomeShard(%q, %d) = %d, want %d", tt.give, tt.n, got, tt.want)
		}
	}
	// Spread: 8000 users over 8 shards, none far from 1000.
	h := mustHasher(t, bytes.Repeat([]byte{5}, MinUserHashKey))
	var per [8]int
	for i := 0; i < 8000; i++ {
		per[HomeShard(h.UserHash(fmt.Sprint("u", i)), 8)]++
	}
	for i, c := range per {
		if c < 850 || c > 1150 {
			t.Fatalf("shard %d homes %d of 8000 users: %v", i, c, per)
		}
	}
}

// TestUserHashKeySharedThroughRedis: without a configured key, every Store on one Redis
// uses the key kept there (created once), so instances agree on every user's hash; a
// configured key wins.
func TestUserHashKeySharedThroughRedis(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s1 := newStore(t, rdb, Options{InstanceID: "a"})
		s2 := newStore(t, rdb, Options{InstanceID: "b", Namespace: "other"})
		raw, err := rdb.Get(ctx, UserHashKeyName).Result()
		if err != nil {
			t.Fatalf("no key in Redis after New: %v", err)
		}
		key, err := hex.DecodeString(raw)
		if err != nil || len(key) < MinUserHashKey {
			t.Fatalf("key in Redis %d bytes, err %v", len(key), err)
		}
		id := uniqueID(t)
		if a, b := s1.UserHash(id), s2.UserHash(id); a != b {
			t.Fatalf("two stores on one Redis: %s and %s", a, b)
		}
		if a, b := s1.UserHash(id), mustHasher(t, key).UserHash(id); a != b {
			t.Fatalf("store hash %s, hash under the Redis key %s", a, b)
		}
		other := bytes.Repeat([]byte{9}, MinUserHashKey)
		s3 := newStore(t, rdb, Options{UserHashKey: other})
		if a, b := s3.UserHash(id), mustHasher(t, other).UserHash(id); a != b || a == s1.UserHash(id) {
			t.Fatalf("configured key not used: %s, want %s (Redis key gives %s)", a, b, s1.UserHash(id))
		}
		if again, _ := rdb.Get(ctx, UserHashKeyName).Result(); again != raw {
			t.Fatal("the key in Redis changed")
		}
	})
}

// TestUserHashKeyRefusedWhenMalformed: a damaged key in Redis stops New instead of being
// replaced silently (that would move every user to other records mid-sale). On miniredis:
// the real servers' key is shared by every test.
func TestUserHashKeyRefusedWhenMalformed(t *testing.T) {
	for _, give := range []string{"not hex", hex.EncodeToString(make([]byte, MinUserHashKey-1))} {
		rdb := miniRedis(t)
		if err := rdb.Set(context.Background(), UserHashKeyName, give, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := New(rdb, Options{}, nil, quietLog()); err == nil || !strings.Contains(err.Error(), UserHashKeyName) {
			t.Fatalf("key %q: New error %v, want one naming %s", give, err, UserHashKeyName)
		}
		if v, _ := rdb.Get(context.Background(), UserHashKeyName).Result(); v != give {
			t.Fatalf("key %q replaced by %q", give, v)
		}
	}
}

func TestSignIsKeyedAndApartFromUserHashes(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, MinUserHashKey), bytes.Repeat([]byte{2}, MinUserHashKey)
	h1, _ := NewHasher(k1)
	h2, _ := NewHasher(k2)
	if h1.Sign("pass", "m") == h2.Sign("pass", "m") {
		t.Error("the signature does not depend on the key")
	}
	if h1.Sign("pass", "m") == h1.Sign("ticket", "m") {
		t.Error("two domains sign alike")
	}
	h1again, _ := NewHasher(k1) // another instance with the same key
	if h1.Sign("pass", "m") != h1again.Sign("pass", "m") || len(h1.Sign("pass", "m")) != 32 {
		t.Error("the signature is not a stable 32-hex MAC: two hashers of one key disagree")
	}
	if h1.Sign("", "x") == h1.UserHash("x") || h1.Sign("", "") == h1.UserHash("") {
		t.Error("a signature equals a user hash")
	}
}

// The activity-wide key names are what a running deployment holds in Redis: a change of one
// strands the keys written before it (an upgrade would find no meta and no restore job).
func TestActivityKeyNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Meta("a1"), "sk:{a1}:meta"},
		{Token("a1", "th"), "sk:{a1}:tok:th"},
		{TokenCount("a1", "uh"), "sk:{a1}:tokn:uh"},
		{Funnel("a1"), "sk:{a1}:funnel"},
		{FunnelTimes("a1"), "sk:{a1}:ftimes"},
		{FunnelUsers("a1", "tried"), "sk:{a1}:hll:tried"},
		{RestoreLockKey("a1"), "sk:{a1}:restoring"},
		{IssuedKey("a1"), "sk:{a1}:issued"},
		{LostKey("a1"), "sk:{a1}:lost"},
		{RestoreJobKey("a1"), "sk:{a1}:restorejob"},
		{UserHashKeyName, "sk:userhashkey"},
	} {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}
