package inventory

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/keyspace"
)

// Redis key names of the activities and their shards. docs/DESIGN.md is the reference; the
// instance-wide names and their namespace are package keyspace's. Activity ids are
// validated (keyspace.ValidName) before they reach a key; user ids never do (their
// hash does). The order pipeline names no key here: it calls the Ledger's verbs with
// reservation and activity ids, and package inventory/journal's with the journal streams
// sk:journals lists.

// MinUserHashKey is the shortest user-hash key accepted, in bytes.
const MinUserHashKey = 32

// UserHashKeyName is the Redis key holding the deployment's user-hash key (64 hex digits)
// when none is configured. It is not namespaced: every instance sharing the Redis must
// hash a user the same way, or the instances would disagree on the user's records.
const UserHashKeyName = keyspace.Prefix + "userhashkey"

// Hasher maps user ids to the user hashes that keys and hash fields carry instead of the
// raw id: HMAC-SHA256 under a per-deployment secret key, truncated to 128 bits and written
// as 32 lowercase hex digits. Without the key nobody can choose an id whose hash equals
// another user's. Safe for concurrent use.
type Hasher struct {
	pool sync.Pool // of *hashState
}

type hashState struct {
	mac hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// NewHasher returns a Hasher keyed with key (at least MinUserHashKey bytes; copied).
func NewHasher(key []byte) (*Hasher, error) {
	if len(key) < MinUserHashKey {
		return nil, fmt.Errorf("%w: user hash key of %d bytes, want at least %d", ErrInvalid, len(key), MinUserHashKey)
	}
	k := bytes.Clone(key)
	h := &Hasher{}
	h.pool.New = func() any { return &hashState{mac: hmac.New(sha256.New, k), in: make([]byte, 0, 64)} }
	return h, nil
}

// UserHash is the user hash of userID: 32 lowercase hex digits.
func (h *Hasher) UserHash(userID string) string {
	st := h.pool.Get().(*hashState)
	out := st.hash(userID)
	if cap(st.in) <= 4096 {
		h.pool.Put(st)
	}
	return out
}

// Sign returns the MAC of a message under the deployment's key (the user-hash key): 32
// lowercase hex digits, the first 128 bits of HMAC-SHA256(key, NUL + domain + NUL + msg). The
// leading NUL byte, which no user id holds, keeps every signature apart from every user hash,
// and domain keeps the signatures of different uses apart. Safe for concurrent use.
func (h *Hasher) Sign(domain, msg string) string {
	st := h.pool.Get().(*hashState)
	st.mac.Reset()
	st.in = append(append(append(append(st.in[:0], 0), domain...), 0), msg...)
	st.mac.Write(st.in)
	st.mac.Sum(st.sum[:0])
	var out [2 * userHashBytes]byte
	hex.Encode(out[:], st.sum[:userHashBytes])
	if cap(st.in) <= 4096 {
		h.pool.Put(st)
	}
	return string(out[:])
}

// hash computes one user hash; its only allocation is the result.
func (st *hashState) hash(userID string) string {
	st.mac.Reset()
	st.in = append(st.in[:0], userID...)
	st.mac.Write(st.in)
	st.mac.Sum(st.sum[:0])
	var out [2 * userHashBytes]byte
	hex.Encode(out[:], st.sum[:userHashBytes])
	return string(out[:])
}

// ValidUserHash reports whether s has the form of a user hash: 32 lowercase hex digits, or
// 16 (the unkeyed FNV-1a 64 form, which journal entries and records may still carry).
func ValidUserHash(s string) bool {
	if len(s) != 2*userHashBytes && len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// userHashBytes is the length of a user hash in bytes (128 bits).
const userHashBytes = 16

// LoadUserHashKey returns the deployment's user-hash key kept in Redis under
// UserHashKeyName, creating it (32 random bytes, SET NX) if absent, so that every
// instance on the Redis agrees without configuration.
func LoadUserHashKey(ctx context.Context, rdb redis.UniversalClient) ([]byte, error) {
	b := make([]byte, MinUserHashKey)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("inventory: user hash key: %w", err)
	}
	if err := rdb.SetNX(ctx, UserHashKeyName, hex.EncodeToString(b), 0).Err(); err != nil {
		return nil, fmt.Errorf("inventory: user hash key: %w", err)
	}
	v, err := rdb.Get(ctx, UserHashKeyName).Result()
	if err != nil {
		return nil, fmt.Errorf("inventory: user hash key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < MinUserHashKey {
		return nil, fmt.Errorf("inventory: user hash key in %s is not %d+ bytes of hex: delete it between sales to make a new one", UserHashKeyName, MinUserHashKey)
	}
	return key, nil
}

// HomeShard is the shard that keeps the user's purchase record among n shards: the first
// 64 bits of the user hash modulo n (all of a 16-digit hash of the FNV-1a form, so the
// entries that carry one settle on the shard that took them).
func HomeShard(userHash string, n int) int {
	if len(userHash) > 16 {
		userHash = userHash[:16]
	}
	v, err := strconv.ParseUint(userHash, 16, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return int(v % uint64(n))
}

// ShardKeys names the keys of one stock shard; all share the hash tag {A:e:i}.
type ShardKeys struct {
	Activity string
	Epoch    int
	Shard    int
	tag      string
}

// Shard returns the key names of shard i of epoch e of the activity.
func Shard(activity string, epoch, shard int) ShardKeys {
	return ShardKeys{Activity: activity, Epoch: epoch, Shard: shard,
		tag: keyspace.Prefix + "{" + activity + ":" + strconv.Itoa(epoch) + ":" + strconv.Itoa(shard) + "}:"}
}

// Stock is the shard's unit count; missing means closed (drained, or not sealed yet).
func (k ShardKeys) Stock() string { return k.tag + "stock" }

// Users is the hash of everything of the users whose home shard this is: "<uh>" the user's
// state (units held, sequence, last reservation id, limits: user.go), "<uh>:i:<hash>"
// idempotency bindings, "<uh>:r:<rid>" refund markers; and the shard's
// reservation records, "r:<n>" (RecordField, record.go) with "r:<n>:c" (CompField), which
// a reshard does not copy (a user hash is hex, so no user field starts with "r:").
func (k ShardKeys) Users() string { return k.tag + "users" }

// Seq is the shard's counter of reservation numbers (the n of a reservation id).
func (k ShardKeys) Seq() string     { return k.tag + "seq" }
func (k ShardKeys) Journal() string { return k.tag + "journal" }
func (k ShardKeys) Stats() string   { return k.tag + "stats" }
func (k ShardKeys) Credits() string { return k.tag + "credits" }

// unwritten are the shard's keys that no script writes, which a shard made by an earlier
// release may still hold (last ids, idempotency bindings and holds kept outside Users,
// compensation credits, refunds): Retire deletes them with the others.
func (k ShardKeys) unwritten() []string {
	return []string{k.tag + "last", k.tag + "idem", k.tag + "holds", k.tag + "compcredits", k.tag + "refunds"}
}

// XOut is the hash of units in transit from this shard (inventory_transfer.lua debit,
// inventory_fail.lua on a drained shard): id -> "<units>|<target epoch:shard or empty>|<ms>".
func (k ShardKeys) XOut() string { return k.tag + "xout" }

// XIn is the hash of transfers credited to this shard: id -> units (credit once per id).
func (k ShardKeys) XIn() string { return k.tag + "xin" }

// Gen is the generation of the activity's Redis state this shard belongs to (meta's "gen",
// inventory/generation.go): the reserve script sells only when it equals the caller's, so
// a reservation that stalled past a restore's fence, or one on a shard a late write brought
// back on a Redis that lost the activity, is refused. A restore's fence sets it to
// "restoring"; a shard without it (a reshard's, or one sealed without generations) is given it by
// the first reservation that finds meta naming the caller's generation and layout
// (Store.adoptGeneration).
func (k ShardKeys) Gen() string { return k.tag + "gen" }

// Drained is set when a reshard closed this shard: it keeps the units that were moved out,
// so re-running the drain returns the same amount and the shard never reopens.
func (k ShardKeys) Drained() string { return k.tag + "drained" }

// activityKey is the activity-wide key named name: "sk:{<activity>}:<name>", in the activity's
// hash tag (the node of its meta).
func activityKey(activity, name string) string {
	return keyspace.Prefix + "{" + activity + "}:" + name
}

// ArchivedKey is the mark an archive leaves where the activity's keys were (lifecycle.go):
// unix ms of the archive, kept archivedMarkTTL.
func ArchivedKey(activity string) string { return activityKey(activity, "archived") }

// Meta is the activity's metadata hash (tag {A}).
func Meta(activity string) string { return activityKey(activity, "meta") }

// Token is a one-time grab token of the activity.
func Token(activity, tokenHash string) string {
	return activityKey(activity, "tok:") + tokenHash
}

// TokenCount counts the grab tokens a user minted for the activity within one token lifetime.
func TokenCount(activity, userHash string) string {
	return activityKey(activity, "tokn:") + userHash
}

// ReservationID is the id of the n-th reservation of shard i of epoch e, made by script call
// number call of the process incarnation issuer (16 lowercase hex digits drawn at the
// process's start: Store.issuer): <activity>.<epoch>.<shard>.<n>.<issuer>-<call>. The number
// alone can come out of the script twice, from a Redis that went back (a rollback, a failover
// that lost writes): to another instance whose floor is older, before the fleet fences the
// activity, or to a call of this one that was in flight (rollback.go). No two calls have the
// same issuer and call number, and a call hands each number out once: so an id is never
// handed out twice, whatever Redis forgot.
func ReservationID(activity string, epoch, shard int, n int64, issuer string, call int64) string {
	return ReservationNumber(activity, epoch, shard, n) + "." + issuer + "-" + strconv.FormatInt(call, 10)
}

// ReservationNumber is the shard's n-th reservation number, <activity>.<epoch>.<shard>.<n>:
// a reservation id without its issuer. A release before issuers handed it out as the id
// (ParseReservationID still reads it); the lost listing names reservations by it (the id of
// a 202 is its number, a dot and the issuer), since MySQL cannot tell which call handed out
// a number whose journal entry Redis lost.
func ReservationNumber(activity string, epoch, shard int, n int64) string {
	return activity + "." + strconv.Itoa(epoch) + "." + strconv.Itoa(shard) + "." + strconv.FormatInt(n, 10)
}

// issuerLen is the length of a process incarnation, the issuer part's first half: 16
// lowercase hex digits, the 64 random bits a process draws at start.
const issuerLen = 16

// ParseReservationID splits a reservation id into the shard keys and record number. It
// rejects anything that is not exactly the form ReservationID makes, or ReservationNumber
// (the id of a release before issuers).
func ParseReservationID(rid string) (ShardKeys, int64, bool) {
	// The activity id cannot hold '.', so the dots split the fields: <activity id>.<epoch,
	// 1-9 digits>.<shard, 1-4 digits>.<n, 1-19 digits>[.<issuer, 16 lowercase hex
	// digits>-<call, 1-19 digits>], each number in canonical form.
	parts := strings.Split(rid, ".")
	if len(parts) == 5 && validIssuer(parts[4]) {
		parts = parts[:4]
	}
	if len(parts) != 4 || !keyspace.ValidName(parts[0]) || !digits(parts[1], 9) || !digits(parts[2], 4) || !digits(parts[3], 19) {
		return ShardKeys{}, 0, false
	}
	e, err1 := strconv.Atoi(parts[1])
	s, err2 := strconv.Atoi(parts[2])
	n, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ShardKeys{}, 0, false
	}
	return Shard(parts[0], e, s), n, true
}

// validIssuer reports whether s is an id's issuer part: issuerLen lowercase hex digits, '-'
// and a call number.
func validIssuer(s string) bool {
	if len(s) < issuerLen+2 || s[issuerLen] != '-' || !digits(s[issuerLen+1:], 19) {
		return false
	}
	for i := 0; i < issuerLen; i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

// maxReservationIDLen is the longest reservation id: a 64-byte activity id, the epoch, shard
// and number at their widest, the issuer. The orders' and compensations' reservation_id
// columns hold it (sql/003_issuer.sql).
const maxReservationIDLen = 64 + 1 + 9 + 1 + 4 + 1 + 19 + 1 + issuerLen + 1 + 19

// digits reports whether s is 1 to most ASCII digits in canonical form (no leading zero but
// in "0" itself), so every number has one spelling and an id names one record.
func digits(s string, most int) bool {
	if len(s) == 0 || len(s) > most || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Funnel is the activity's sale funnel hash (tag {A}), kept by the api instances (app's
// funnel): counts by outcome, latency buckets and accepted reservations by second.
func Funnel(activity string) string { return activityKey(activity, "funnel") }

// FunnelTimes is the sorted set of the activity's first and last accepted reservation
// (members "first" and "last", scores unix ms, kept with ZADD LT and GT).
func FunnelTimes(activity string) string { return activityKey(activity, "ftimes") }

// FunnelUsers is the HyperLogLog of the distinct users of one stage of the activity's funnel
// ("tried", "bought").
func FunnelUsers(activity, stage string) string {
	return activityKey(activity, "hll:") + stage
}
