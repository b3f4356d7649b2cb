package inventory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/lua"
)

// Mover moves units between stock shards with inventory_transfer.lua: a debit on the
// source records the units in transit (xout) under an id, a credit on the target applies
// once per id (xin), and finish clears the transit entry. Any step may be repeated and a
// crash between two steps leaves the units in transit, where Settle (or Store.Recover)
// finds them and finishes the move; reconciliation counts them as remaining. Safe for
// concurrent use.
type Mover struct {
	rdb   redis.UniversalClient
	sc    *lua.Script
	dur   Durability          // set by New from Options.Durability
	calls prometheus.Counter  // may be nil
	secs  prometheus.Observer // may be nil
	// inc is this mover's incarnation: random, drawn when the mover is built (once per
	// process start), so ids minted by newID never repeat across restarts under the same
	// instance id; seq numbers the ids of this incarnation.
	inc string
	seq atomic.Uint64
}

// creditKeep is how long a target keeps the record of a credited transfer id before
// Recover may forget it (once its source has no transit entry under the id). A transit
// entry older than creditKeep is not credited under its id but moved to a new one first
// (inventory_transfer.lua rekey), so a settler stalled past creditKeep can never credit
// an id whose record was forgotten.
const creditKeep = 10 * time.Minute

// NewMover returns a mover on rdb.
func NewMover(rdb redis.UniversalClient) (*Mover, error) {
	sc, err := lua.Open("inventory_transfer.lua")
	if err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("inventory: transfer incarnation: %w", err)
	}
	return &Mover{rdb: rdb, sc: sc, inc: hex.EncodeToString(b[:])}, nil
}

// newID mints a transfer id that no process ever minted before: prefix (the instance's
// "t<instance id>"), this incarnation and a counter.
func (m *Mover) newID(prefix string) string {
	return prefix + "." + m.inc + "." + strconv.FormatUint(m.seq.Add(1), 36)
}

// transferAnswer is the result of inventory_transfer.lua, valued as the script answers it.
// The zero value is unknown.
type transferAnswer int

// Transfer answers of inventory_transfer.lua.
const (
	xfUnknown transferAnswer = 0
	xfDone    transferAnswer = 1  // debit, credit, finish, retarget: done now
	xfBefore  transferAnswer = 2  // credit: credited before
	xfClosed  transferAnswer = 3  // credit: the target is closed
	xfStale   transferAnswer = 4  // credit: the entry is older than creditKeep (rekey)
	xfEmpty   transferAnswer = 8  // debit: nothing here
	xfShut    transferAnswer = 10 // debit: the source is closed (reshard)
	xfMark    transferAnswer = 13 // debit: the source's generation mark is not the caller's
	xfFloor   transferAnswer = 14 // debit: the source's reservation counter is below the caller's floor
)

// transferAnswerOf decodes an answer of inventory_transfer.lua: one of known, else an error.
func transferAnswerOf(res []any, known ...transferAnswer) (transferAnswer, error) {
	n, ok := asInt(res[0])
	if !ok {
		return xfUnknown, fmt.Errorf("inventory: transfer script: unexpected answer %v", res)
	}
	return lua.Decode("inventory_transfer.lua", n, known...)
}

func (m *Mover) run(ctx context.Context, k ShardKeys, keys4 string, args ...any) ([]any, error) {
	return m.runKeys(ctx, []string{k.Stock(), k.Drained(), keys4, k.Stats()}, args...)
}

func (m *Mover) runKeys(ctx context.Context, keys []string, args ...any) ([]any, error) {
	start := time.Now()
	v, err := m.dur.eval(ctx, m.rdb, m.sc, keys, args...).Result()
	if m.calls != nil {
		m.calls.Inc()
		m.secs.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		return nil, fmt.Errorf("inventory: transfer script: %w", err)
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return nil, fmt.Errorf("inventory: transfer script: unexpected answer %v", v)
	}
	return a, nil
}

// debited is what a debit did.
type debited struct {
	units, left int64  // units moved (0 when the source is empty), the source's stock after
	closed      bool   // a reshard closed the source
	mark        string // units > 0: the source's generation mark, raised by the debit; differs: the mark it holds
	differs     bool   // the source's mark is not the one given: nothing taken
	inHistory   bool   // differs: the mark given is in the source's history (raised since)
	below       bool   // the source's reservation counter is below the floor given: nothing taken
	counter     int64  // below: the counter it holds
}

// debit takes up to want units (more when the source has plenty: half its stock) off src
// into transit towards target, when src's generation mark is mark ("": not checked) and its
// reservation counter is not below floor, and raises that mark (inventory_transfer.lua).
func (m *Mover) debit(ctx context.Context, src, target ShardKeys, id string, want int64, mark string, floor int64) (debited, error) {
	res, err := m.runKeys(ctx, []string{src.Stock(), src.Drained(), src.XOut(), src.Stats(), src.Gen(), src.Seq()},
		"debit", id, want, target.Loc(), mark, floor)
	if err != nil {
		return debited{}, err
	}
	c, err := transferAnswerOf(res, xfDone, xfEmpty, xfShut, xfMark, xfFloor)
	if err != nil {
		return debited{}, err
	}
	switch c {
	case xfDone:
		if len(res) < 4 {
			return debited{}, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
		}
		u, _ := asInt(res[1])
		l, _ := asInt(res[2])
		return debited{units: u, left: l, mark: asString(res[3])}, nil
	case xfEmpty:
		return debited{}, nil
	case xfShut:
		return debited{closed: true}, nil
	case xfMark:
		if len(res) < 2 {
			return debited{}, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
		}
		h := false
		if len(res) >= 3 {
			n, _ := asInt(res[2])
			h = n == 1
		}
		return debited{differs: true, mark: asString(res[1]), inHistory: h}, nil
	case xfFloor:
		if len(res) < 2 {
			return debited{}, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
		}
		n, ok := asInt(res[1])
		if !ok {
			return debited{}, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
		}
		return debited{below: true, counter: n}, nil
	}
	return debited{}, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
}

// Loc is "<epoch>:<shard>", the form a transit entry names its target in.
func (k ShardKeys) Loc() string { return strconv.Itoa(k.Epoch) + ":" + strconv.Itoa(k.Shard) }

// parseLoc parses a location, "<epoch>:<shard>" (Loc).
func parseLoc(v string) (epoch, shard int, ok bool) {
	e, i, ok := intPair(v)
	if !ok || e < 0 || i < 0 || i >= keyspace.MaxShards {
		return 0, 0, false
	}
	return e, i, true
}

// settleWait bounds how long Settle waits for a reshard that closed the target.
const settleWait = 3 * time.Second

// Settle finishes the move of the units in transit under id from src: it credits them to
// the recorded target, or, when that target was closed by a reshard before the credit, to
// a shard of the current layout (the new target is recorded first, by compare-and-set, so
// concurrent settlers agree on one). It returns nil once nothing is in transit under id,
// ErrBusy when a reshard kept the target closed for settleWait (the units stay in transit
// for a later Settle), or a Redis error. A new target is the home shard of userHash when
// given (a failed reservation's units go back where its buyer may buy again), else a shard
// chosen by id.
func (m *Mover) Settle(ctx context.Context, src ShardKeys, id, userHash string) error {
	deadline := time.Now().Add(settleWait)
	for i := 0; ; i++ {
		v, err := m.rdb.HGet(ctx, src.XOut(), id).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("inventory: read transit %s: %w", id, err)
		}
		units, at, target, err := parseTransit(id, v)
		if err != nil {
			return err
		}
		credited := false
		if target != "" {
			var stale bool
			credited, stale, err = m.creditTarget(ctx, src, id, target, units, at)
			if err != nil {
				return err
			}
			if stale {
				// Too old to be credited under its id: move it to a fresh one (or find it
				// settled by someone else) and read it again.
				nid := m.newID("k")
				res, err := m.run(ctx, src, src.XOut(), "rekey", id, nid)
				if err != nil {
					return err
				}
				if n, _ := asInt(res[0]); n == 1 {
					id = nid
				}
				continue
			}
		}
		if credited {
			res, err := m.run(ctx, src, src.XOut(), "finish", id)
			if err != nil {
				return err
			}
			_, err = transferAnswerOf(res, xfDone)
			return err
		}
		// No target yet, or it was closed before the credit: pick one in the current layout.
		now, err := m.current(ctx, src.Activity, id, userHash)
		if err != nil {
			return err
		}
		if now != "" && now != target {
			// Changed, another target recorded, or no longer in transit: the loop reads
			// the entry again whatever the answer.
			if _, err := m.run(ctx, src, src.XOut(), "retarget", id, target, now); err != nil {
				return err
			}
			continue
		}
		if target != "" && now == target {
			// The target of the current layout refused as closed, and meta still names that
			// layout with no reshard under way: a current shard is sealed before the switch
			// and closed only by a later reshard's drain, so its node lost it (or meta went
			// back past that reshard). Waiting would answer busy for good (a compensation of
			// a reservation on a drained shard would wait on it for ever).
			return fmt.Errorf("%w: units of %s: target %s of the current layout is closed outside a reshard", ErrRecovering, id, target)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: units of %s stay in transit while %s reshards", ErrBusy, id, src.Activity)
		}
		if err := backoff.Sleep(ctx, backoff.Linear(5*time.Millisecond, 50*time.Millisecond, i+1)); err != nil {
			return err
		}
	}
}

// parseTransit splits the transit entry v of id ("units|target|at") into its units, its
// time and its target ("" when none is recorded yet); an entry of another form is an error.
func parseTransit(id, v string) (units, at int64, target string, err error) {
	parts := strings.SplitN(v, "|", 3)
	if len(parts) != 3 {
		return 0, 0, "", fmt.Errorf("inventory: transit %s: bad entry %q", id, v)
	}
	units, err1 := strconv.ParseInt(parts[0], 10, 64)
	at, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, "", fmt.Errorf("inventory: transit %s: bad entry %q", id, v)
	}
	return units, at, parts[1], nil
}

// creditTarget credits the units in transit under id from src to target, a location of
// src's activity: credited when the target took them (now or before), stale when the entry
// is too old to be credited under its id, neither when the target is closed.
func (m *Mover) creditTarget(ctx context.Context, src ShardKeys, id, target string, units, at int64) (credited, stale bool, err error) {
	te, ts, ok := parseLoc(target)
	if !ok {
		return false, false, fmt.Errorf("inventory: transit %s: bad target %q", id, target)
	}
	tk := Shard(src.Activity, te, ts)
	res, err := m.run(ctx, tk, tk.XIn(), "credit", id, units, src.Loc(), at, creditKeep.Milliseconds())
	if err != nil {
		return false, false, err
	}
	c, err := transferAnswerOf(res, xfDone, xfBefore, xfClosed, xfStale)
	if err != nil {
		return false, false, err
	}
	return c == xfDone || c == xfBefore, c == xfStale, nil
}

// current names a shard of the activity's current layout for the transit id, or "" while
// a reshard is in progress (its shards are about to close).
func (m *Mover) current(ctx context.Context, activity, id, userHash string) (string, error) {
	vals, err := m.rdb.HMGet(ctx, Meta(activity), "epoch", "shards", "reshard", "gen").Result()
	if err != nil {
		return "", fmt.Errorf("inventory: read meta: %w", err)
	}
	if g := asString(vals[3]); g == generationFenced || g == generationRolledBack {
		// Fenced (a restore, a rollback noticed): no layout is current until the restore,
		// which rebuilds stock from MySQL; a reshard recorded before the fence never finishes.
		return "", fmt.Errorf("%w: units of %s stay in transit", ErrRecovering, activity)
	}
	e, ok1 := asInt(vals[0])
	n, ok2 := asInt(vals[1])
	if !ok1 || !ok2 || n < 1 {
		return "", fmt.Errorf("inventory: meta of %s: no layout", activity)
	}
	if asString(vals[2]) != "" {
		return "", nil
	}
	if userHash != "" {
		return Shard(activity, int(e), HomeShard(userHash, int(n))).Loc(), nil
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return Shard(activity, int(e), int(h.Sum32()%uint32(n))).Loc(), nil
}

// transitAges parses the transit entries of one xout hash: id -> age.
func transitAges(all map[string]string, now int64) map[string]time.Duration {
	out := make(map[string]time.Duration, len(all))
	for id, v := range all {
		ms := int64(0)
		if i := strings.LastIndexByte(v, '|'); i >= 0 {
			ms, _ = strconv.ParseInt(v[i+1:], 10, 64)
		}
		out[id] = time.Duration(now-ms) * time.Millisecond
	}
	return out
}

// Recover settles every transfer of the activity that has been in transit for at least
// minAge, on every shard of every layout it ever had: the background half of a transfer
// whose requester crashed, hung up or met a Redis error between debit and credit, and of a
// compensation cut short on a drained shard. One pipelined read per call when nothing is
// in transit. It returns the number of transfers settled and the first error.
func (s *Store) Recover(ctx context.Context, id string, minAge time.Duration) (int, error) {
	spec, err := s.rdb.HGet(ctx, Meta(id), "layouts").Result()
	if errors.Is(err, redis.Nil) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("inventory: read meta: %w", err)
	}
	lays, err := parseLayouts(id, spec)
	if err != nil {
		return 0, err
	}
	var shards []ShardKeys
	for _, l := range lays {
		for i := 0; i < l.Shards; i++ {
			shards = append(shards, Shard(id, l.Epoch, i))
		}
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(shards))
	for i, k := range shards {
		cmds[i] = pipe.HGetAll(ctx, k.XOut())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("inventory: read transit of %s: %w", id, err)
	}
	now := time.Now().UnixMilli()
	settled := 0
	var errs []error
	if s.sweepDue(id) {
		if err := s.mover.forgetCredits(ctx, shards); err != nil {
			errs = append(errs, err)
		}
	}
	for i, k := range shards {
		ages := transitAges(cmds[i].Val(), now)
		tids := make([]string, 0, len(ages))
		for tid, age := range ages {
			if age >= minAge {
				tids = append(tids, tid)
			}
		}
		sort.Strings(tids)
		for _, tid := range tids {
			if err := s.mover.Settle(ctx, k, tid, ""); err != nil {
				errs = append(errs, err)
				continue
			}
			settled++
		}
	}
	return settled, errors.Join(errs...)
}

// sweepWanted reports whether the credit records of the activity are due for a sweep
// (sweepDue would take it), without recording one.
func (s *Store) sweepWanted(id string) bool {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	return time.Since(s.swept[id]) >= creditKeep/2
}

// sweepDue reports whether the credit records of the activity are due for a sweep (at most
// once per creditKeep/2 per Store), and records the sweep.
func (s *Store) sweepDue(id string) bool {
	now := time.Now()
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	if now.Sub(s.swept[id]) < creditKeep/2 {
		return false
	}
	s.swept[id] = now
	return true
}

// forgetCredits removes the credit records (xin) of the shards that are older than
// creditKeep and whose source holds no transit entry under their id any more: the
// transfer finished, and a late settler of that id is refused (its entry is older than
// creditKeep, see inventory_transfer.lua credit). Records of an older form (units only, no
// source) are kept: the layout's cleanup removes them.
func (m *Mover) forgetCredits(ctx context.Context, shards []ShardKeys) error {
	cutoff := time.Now().Add(-creditKeep).UnixMilli()
	for _, k := range shards {
		var cursor uint64
		for {
			kv, next, err := m.rdb.HScan(ctx, k.XIn(), cursor, "*", 500).Result()
			if err != nil {
				return fmt.Errorf("inventory: scan %s: %w", k.XIn(), err)
			}
			for i := 0; i+1 < len(kv); i += 2 {
				tid, v := kv[i], kv[i+1]
				parts := strings.Split(v, "|")
				if len(parts) != 3 {
					continue
				}
				ms, err := strconv.ParseInt(parts[2], 10, 64)
				se, si, ok := parseLoc(parts[1])
				if err != nil || !ok || ms > cutoff {
					continue
				}
				src := Shard(k.Activity, se, si)
				moving, err := m.rdb.HExists(ctx, src.XOut(), tid).Result()
				if err != nil {
					return fmt.Errorf("inventory: read transit %s: %w", tid, err)
				}
				if moving {
					continue
				}
				if _, err := m.run(ctx, k, k.XIn(), "forget", tid, creditKeep.Milliseconds()); err != nil {
					return err
				}
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
	}
	return nil
}
