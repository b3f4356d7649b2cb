package inventory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/keyspace"
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
	sc    *redis.Script
	src   string
	dur   Durability          // set by New from Options.Durability
	calls prometheus.Counter  // may be nil
	secs  prometheus.Observer // may be nil
}

// NewMover returns a mover on rdb.
func NewMover(rdb redis.UniversalClient) (*Mover, error) {
	src, err := lua.Source("inventory_transfer.lua")
	if err != nil {
		return nil, err
	}
	return &Mover{rdb: rdb, sc: redis.NewScript(src), src: src}, nil
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
	xfEmpty   transferAnswer = 8  // debit: nothing here
	xfShut    transferAnswer = 10 // debit: the source is closed (reshard)
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
	start := time.Now()
	v, err := m.dur.eval(ctx, m.rdb, m.sc, m.src, []string{k.Stock(), k.Drained(), keys4, k.Stats()}, args...).Result()
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

// debit takes up to want units (more when the source has plenty: half its stock) off src
// into transit towards target. It returns the units moved (0 when src is empty) and
// closed when a reshard closed src.
func (m *Mover) debit(ctx context.Context, src, target ShardKeys, id string, want int64) (units, left int64, closed bool, err error) {
	res, err := m.run(ctx, src, src.XOut(), "debit", id, want, target.Loc())
	if err != nil {
		return 0, 0, false, err
	}
	c, err := transferAnswerOf(res, xfDone, xfEmpty, xfShut)
	if err != nil {
		return 0, 0, false, err
	}
	switch c {
	case xfDone:
		if len(res) < 3 {
			return 0, 0, false, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
		}
		u, _ := asInt(res[1])
		l, _ := asInt(res[2])
		return u, l, false, nil
	case xfEmpty:
		return 0, 0, false, nil
	case xfShut:
		return 0, 0, true, nil
	}
	return 0, 0, false, fmt.Errorf("inventory: transfer debit: unexpected answer %v", res)
}

// Loc is "<epoch>:<shard>", the form a transit entry names its target in.
func (k ShardKeys) Loc() string { return strconv.Itoa(k.Epoch) + ":" + strconv.Itoa(k.Shard) }

func parseLoc(v string) (epoch, shard int, ok bool) {
	a, b, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, false
	}
	e, err1 := strconv.Atoi(a)
	i, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || e < 0 || i < 0 || i >= keyspace.MaxShards {
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
		parts := strings.SplitN(v, "|", 3)
		if len(parts) != 3 {
			return fmt.Errorf("inventory: transit %s: bad entry %q", id, v)
		}
		units, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return fmt.Errorf("inventory: transit %s: bad entry %q", id, v)
		}
		target := parts[1]
		credited := false
		if target != "" {
			te, ts, ok := parseLoc(target)
			if !ok {
				return fmt.Errorf("inventory: transit %s: bad target %q", id, target)
			}
			res, err := m.run(ctx, Shard(src.Activity, te, ts), Shard(src.Activity, te, ts).XIn(), "credit", id, units)
			if err != nil {
				return err
			}
			c, err := transferAnswerOf(res, xfDone, xfBefore, xfClosed)
			if err != nil {
				return err
			}
			credited = c == xfDone || c == xfBefore
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
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: units of %s stay in transit while %s reshards", ErrBusy, id, src.Activity)
		}
		t := time.NewTimer(time.Duration(min(5*(i+1), 50)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// current names a shard of the activity's current layout for the transit id, or "" while
// a reshard is in progress (its shards are about to close).
func (m *Mover) current(ctx context.Context, activity, id, userHash string) (string, error) {
	vals, err := m.rdb.HMGet(ctx, Meta(activity), "epoch", "shards", "reshard").Result()
	if err != nil {
		return "", fmt.Errorf("inventory: read meta: %w", err)
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
