package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/lua"
)

// Ledger is what happens to a reservation after Reserve took it and its journal entry was
// relayed (package inventory/journal reads and acknowledges the entries), seen from the
// order pipeline: the reservation is confirmed once its order is committed (Confirm), or
// failed for good with its units given back (Fail, Refund, MarkCompensated); and
// reconciliation reads the counts (Counts) and the reservations left PENDING
// (PendingScan). Every key it touches is inventory's; the caller names reservations by id
// and activities by id only. Every verb is idempotent. Safe for concurrent use.
type Ledger struct {
	rdb                   redis.UniversalClient
	confirm, fail, refund *lua.Script
	fence                 *lua.Script // inventory_fence_meta.lua (FenceRefused)
	mv                    *Mover
	d                     Durability // SetDurability
}

// SetDurability makes the ledger's writes that settle a reservation (confirm, fail, refuse,
// refund) wait in mode replicas:N until N replicas hold them (Durability.Acked), as a
// reservation does: one that falls short is ErrNotDurable, and the caller tries it again
// (every verb is idempotent). Without it a failover could take back a confirm the writer
// already counted, leaving the record PENDING beside its order until the reconciliation's
// repair (OrphanAfter). Call it before the ledger is used.
func (l *Ledger) SetDurability(d Durability) { l.d = d }

// run runs script s as Durability.eval does.
func (l *Ledger) run(ctx context.Context, s *lua.Script, keys []string, args ...any) *redis.Cmd {
	return l.d.eval(ctx, l.rdb, s, keys, args...)
}

// NewLedger returns a ledger on rdb; an error means an embedded script did not load.
func NewLedger(rdb redis.UniversalClient) (*Ledger, error) {
	l := &Ledger{rdb: rdb}
	for _, x := range []struct {
		name string
		dst  **lua.Script
	}{
		{"inventory_confirm.lua", &l.confirm}, {"inventory_fail.lua", &l.fail},
		{"inventory_refund.lua", &l.refund}, {"inventory_fence_meta.lua", &l.fence},
	} {
		s, err := lua.Open(x.name)
		if err != nil {
			return nil, fmt.Errorf("inventory: %w", err)
		}
		*x.dst = s
	}
	mv, err := NewMover(rdb)
	if err != nil {
		return nil, err
	}
	l.mv = mv
	return l, nil
}

// ConfirmResult is the outcome of inventory_confirm.lua for one reservation. The zero value
// is Unknown.
type ConfirmResult int

// Confirm outcomes, numbered as the script answers them.
const (
	ConfirmUnknown   ConfirmResult = iota
	Confirmed                      // PENDING -> CONFIRMED now
	AlreadyConfirmed               // it was CONFIRMED already
	ConfirmConflict                // the record is FAILED; nothing changed
	ConfirmMissing                 // no record (archived, or never written)
	ConfirmOther                   // the record is another buyer's, or another id's under the same number; nothing changed
)

// FailResult is the outcome of inventory_fail.lua. The zero value is Unknown.
type FailResult int

// Fail outcomes, numbered as the script answers them.
const (
	FailUnknown        FailResult = iota
	FailedNow                     // PENDING -> FAILED now, stock returned
	AlreadyFailed                 // it was FAILED already
	FailConfirmed                 // the record is CONFIRMED; nothing changed
	FailMissing                   // no record of this reservation (gone, or another id under its number)
	FailedNowMoved                // PENDING -> FAILED now; the shard was drained: units in transit
	AlreadyFailedMoved            // FAILED already, its units still in transit: finish the credit
)

// refundResult is the outcome of inventory_refund.lua. The zero value is unknown.
type refundResult int

const (
	refundUnknown  refundResult = iota
	refundedNow                 // the count was lowered now
	refundedBefore              // the marker was there: refunded before
	refundClosed                // the shard is drained or not sealed: a reshard moves the users hash
)

// ConfirmResultOf decodes an answer of inventory_confirm.lua; any other number is an error.
func ConfirmResultOf(code int64) (ConfirmResult, error) {
	return lua.Decode("inventory_confirm.lua", code, Confirmed, AlreadyConfirmed, ConfirmConflict, ConfirmMissing, ConfirmOther)
}

// FailResultOf decodes an answer of inventory_fail.lua; any other number is an error.
func FailResultOf(code int64) (FailResult, error) {
	return lua.Decode("inventory_fail.lua", code, FailedNow, AlreadyFailed, FailConfirmed, FailMissing, FailedNowMoved, AlreadyFailedMoved)
}

// Confirmation asks to confirm one reservation with the id of its committed order.
type Confirmation struct {
	ReservationID string
	OrderID       int64
	// UserHash is the order's buyer: a record of another buyer under the same number is not
	// confirmed (ConfirmOther), nor one of another id (the same number handed out again by a
	// Redis that went back, under another issuer). "" skips the buyer check.
	UserHash string
}

// Confirm marks the reservations CONFIRMED with their order ids: one script call per shard,
// all of them in one pipeline. It returns a result per confirmation, in order;
// ConfirmUnknown where the call of that shard failed or the reservation id is malformed,
// and then the error says why (the others' results stand).
func (l *Ledger) Confirm(ctx context.Context, cs []Confirmation) ([]ConfirmResult, error) {
	out := make([]ConfirmResult, len(cs))
	type group struct {
		call lua.Call
		idx  []int
	}
	var groups []*group
	var errs []error
	byShard := map[string]*group{}
	for i, c := range cs {
		k, n, ok := ParseReservationID(c.ReservationID)
		if !ok {
			errs = append(errs, fmt.Errorf("%w: reservation id %q", ErrInvalid, c.ReservationID))
			continue
		}
		g := byShard[k.Stats()]
		if g == nil {
			g = &group{}
			byShard[k.Stats()] = g
			groups = append(groups, g)
		}
		if g.call.Keys == nil {
			g.call.Keys = []string{k.Users(), k.Stats()}
		}
		g.call.Args = append(g.call.Args, RecordField(n), c.OrderID, c.UserHash, c.ReservationID)
		g.idx = append(g.idx, i)
	}
	if len(groups) == 0 {
		return out, errors.Join(errs...)
	}
	calls := make([]lua.Call, len(groups))
	for i, g := range groups {
		calls[i] = g.call
	}
	var cmds []*redis.Cmd
	if l.d.Replicas > 0 {
		cmds = make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			if cmds[i] = l.run(ctx, l.confirm, c.Keys, c.Args...); cmds[i].Err() != nil {
				errs = append(errs, fmt.Errorf("inventory: confirm: %w", cmds[i].Err()))
			}
		}
	} else {
		var err error
		if cmds, err = lua.RunMany(ctx, l.rdb, l.confirm, calls); err != nil {
			errs = append(errs, fmt.Errorf("inventory: confirm: %w", err))
		}
	}
	for i, c := range cmds {
		if c.Err() != nil {
			continue
		}
		codes, err := confirmCodes(c, len(groups[i].idx))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for j, code := range codes {
			res, err := ConfirmResultOf(code)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[groups[i].idx[j]] = res
		}
	}
	return out, errors.Join(errs...)
}

// confirmCodes reads inventory_confirm.lua's answer for n records: one code when n is 1,
// else a list of n.
func confirmCodes(c *redis.Cmd, n int) ([]int64, error) {
	if n == 1 {
		code, err := c.Int64()
		if err != nil {
			return nil, fmt.Errorf("inventory: inventory_confirm.lua: %w", err)
		}
		return []int64{code}, nil
	}
	codes, err := c.Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("inventory: inventory_confirm.lua: %w", err)
	}
	if len(codes) != n {
		return nil, fmt.Errorf("inventory: inventory_confirm.lua returned %d codes for %d records", len(codes), n)
	}
	return codes, nil
}

// Fail fails the reservation for good (PENDING -> FAILED) and gives its units back: to the
// selling shard's stock, or, when a reshard drained that shard, in transit to the buyer's
// home shard of the current layout (credited once per reservation id; a repeated call
// finishes a credit an earlier one left). userHash is the buyer's. It returns the outcome
// and the reservation's quantity; FailConfirmed and FailMissing change nothing.
func (l *Ledger) Fail(ctx context.Context, rid, userHash string) (FailResult, int64, error) {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return FailUnknown, 0, fmt.Errorf("%w: reservation id %q", ErrInvalid, rid)
	}
	res, err := l.run(ctx, l.fail, []string{k.Users(), k.Stock(), k.Stats(), k.Drained(), k.XOut()}, RecordField(n), rid).Int64Slice()
	if err != nil {
		return FailUnknown, 0, fmt.Errorf("inventory: fail %s: %w", rid, err)
	}
	if len(res) != 2 {
		return FailUnknown, 0, fmt.Errorf("inventory: inventory_fail.lua returned %v", res)
	}
	code, err := FailResultOf(res[0])
	if err != nil {
		return FailUnknown, 0, err
	}
	if code == FailedNowMoved || code == AlreadyFailedMoved {
		if err := l.mv.Settle(ctx, k, rid, userHash); err != nil {
			return code, res[1], fmt.Errorf("inventory: credit %s: %w", rid, err)
		}
	}
	return code, res[1], nil
}

// refundTries bounds how often Refund reads the layout again while a reshard moves the
// users hashes (50 ms apart).
const refundTries = 40

// Refund lowers the buyer's count by qty on the user's home shard of the current layout,
// once per reservation (a marker in the users hash; the user's sequence is never lowered).
// While a reshard moves the users hashes (the home shard is drained and the new layout not
// switched yet) it waits and reads the layout again.
func (l *Ledger) Refund(ctx context.Context, rid, userHash string, qty int64) error {
	k, _, ok := ParseReservationID(rid)
	if !ok {
		return fmt.Errorf("%w: reservation id %q", ErrInvalid, rid)
	}
	for attempt := 0; attempt < refundTries; attempt++ {
		vals, err := l.rdb.HMGet(ctx, Meta(k.Activity), "epoch", "shards").Result()
		if err != nil {
			return fmt.Errorf("inventory: refund %s: read layout: %w", rid, err)
		}
		epoch, ok1 := asInt(vals[0])
		shards, ok2 := asInt(vals[1])
		if !ok1 || !ok2 || shards < 1 {
			return fmt.Errorf("inventory: refund %s: no layout in meta", rid)
		}
		home := Shard(k.Activity, int(epoch), HomeShard(userHash, int(shards)))
		v, err := l.run(ctx, l.refund, []string{home.Users(), home.Stock(), home.Drained()},
			userHash, qty, rid).Int64()
		if err != nil {
			return fmt.Errorf("inventory: refund %s: %w", rid, err)
		}
		res, err := lua.Decode("inventory_refund.lua", v, refundedNow, refundedBefore, refundClosed)
		if err != nil {
			return err
		}
		if res != refundClosed {
			return nil
		}
		if err := backoff.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("inventory: refund %s: the layout kept changing", rid)
}

// Compensated reports whether a compensation of the reservation finished every step
// (MarkCompensated); false also when the record is gone.
func (l *Ledger) Compensated(ctx context.Context, rid string) (bool, error) {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return false, fmt.Errorf("%w: reservation id %q", ErrInvalid, rid)
	}
	v, err := l.rdb.HGet(ctx, k.Users(), CompField(n)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("inventory: read compensation state of %s: %w", rid, err)
	}
	return v == rid, nil
}

// MarkCompensated records on the reservation that its compensation finished every step. The
// mark holds the reservation id: a number a Redis that went back handed out again names
// another reservation, whose compensation this mark does not finish.
func (l *Ledger) MarkCompensated(ctx context.Context, rid string) error {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return fmt.Errorf("%w: reservation id %q", ErrInvalid, rid)
	}
	if err := l.rdb.HSet(ctx, k.Users(), CompField(n), rid).Err(); err != nil {
		return fmt.Errorf("inventory: mark %s compensated: %w", rid, err)
	}
	return nil
}

// Layout is one epoch's shard count.
type Layout struct{ Epoch, Shards int }

// layouts reads the activity's loaded stock and every layout it ever had (meta `layouts`,
// or the current epoch and shards when that field is absent). ErrNotFound for an activity
// without meta.
func (l *Ledger) layouts(ctx context.Context, activityID string) (int64, []Layout, error) {
	meta, err := l.rdb.HMGet(ctx, Meta(activityID), "stock", "layouts", "epoch", "shards").Result()
	if err != nil {
		return 0, nil, fmt.Errorf("inventory: read meta of %s: %w", activityID, err)
	}
	str := func(i int) string { s, _ := meta[i].(string); return s }
	if str(0) == "" {
		return 0, nil, fmt.Errorf("%w: activity %s", ErrNotFound, activityID)
	}
	stock, err := strconv.ParseInt(str(0), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("inventory: meta stock of %s: %w", activityID, err)
	}
	spec := str(1)
	if spec == "" {
		spec = str(2) + ":" + str(3)
	}
	out, err := parseLayouts(activityID, spec)
	return stock, out, err
}

// parseLayouts reads meta's layouts field: "<epoch>:<shards>" comma-separated.
func parseLayouts(activityID, spec string) ([]Layout, error) {
	var out []Layout
	for _, p := range strings.Split(spec, ",") {
		e, n, ok := parseTarget(strings.TrimSpace(p))
		if !ok {
			return nil, fmt.Errorf("inventory: meta layouts of %s: bad %q", activityID, p)
		}
		out = append(out, Layout{e, n})
	}
	return out, nil
}

// Counts are an activity's units as Redis counts them, summed over every shard of every
// epoch.
type Counts struct {
	Stock       int64 // units loaded (meta stock)
	Remaining   int64 // sum of the shards' stock plus the units in transit between shards
	Taken       int64 // units reserved (journalled)
	Relayed     int64 // units whose journal entry was handed to the queue
	Confirmed   int64 // units of reservations confirmed
	Failed      int64 // units of reservations failed for good
	Compensated int64 // units given back by compensation
}

// Counts reads the activity's counts in one pipelined read after the meta read, and meta
// once more: a layout retired between the two reads (retire.go) would be counted twice or not
// at all, so the read is repeated (a few times at most) until meta did not change under it.
// ErrNotFound for an activity without meta.
func (l *Ledger) Counts(ctx context.Context, activityID string) (Counts, error) {
	var c Counts
	for try := 0; ; try++ {
		before, err := l.retired(ctx, activityID)
		if err != nil {
			return Counts{}, err
		}
		c, err = l.counts(ctx, activityID)
		if err != nil {
			return Counts{}, err
		}
		after, err := l.retired(ctx, activityID)
		if err != nil {
			return Counts{}, err
		}
		if before == after || try == 4 {
			// The sums of the layouts retired: their shards are gone, their counts kept.
			c.Taken += after[0]
			c.Relayed += after[1]
			c.Confirmed += after[2]
			c.Failed += after[3]
			c.Compensated += after[4]
			c.Remaining += after[5] - after[6]
			return c, nil
		}
	}
}

// retired reads meta's layouts and the sums of the layouts retired (the last element is the
// layouts field's length, so a change of layouts shows).
func (l *Ledger) retired(ctx context.Context, activityID string) ([8]int64, error) {
	var out [8]int64
	fields := make([]string, 0, len(retireStats)+1)
	for _, f := range retireStats {
		fields = append(fields, "retired."+f)
	}
	vals, err := l.rdb.HMGet(ctx, Meta(activityID), append(fields, "layouts")...).Result()
	if err != nil {
		return out, fmt.Errorf("inventory: read meta of %s: %w", activityID, err)
	}
	for i := range retireStats {
		out[i], _ = asInt(vals[i])
	}
	out[7] = int64(len(asString(vals[len(retireStats)])))
	return out, nil
}

// counts sums the shards of the layouts meta names.
func (l *Ledger) counts(ctx context.Context, activityID string) (Counts, error) {
	stock, lays, err := l.layouts(ctx, activityID)
	if err != nil {
		return Counts{}, err
	}
	pipe := l.rdb.Pipeline()
	var stocks []*redis.StringCmd
	var stats []*redis.SliceCmd
	for _, lay := range lays {
		for i := 0; i < lay.Shards; i++ {
			k := Shard(activityID, lay.Epoch, i)
			stocks = append(stocks, pipe.Get(ctx, k.Stock()))
			stats = append(stats, pipe.HMGet(ctx, k.Stats(), retireStats...))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Counts{}, fmt.Errorf("inventory: read shards of %s: %w", activityID, err)
	}
	c := Counts{Stock: stock}
	for i := range stocks {
		if v, err := stocks[i].Int64(); err == nil {
			c.Remaining += v
		}
		vals := stats[i].Val()
		get := func(j int) int64 {
			if j >= len(vals) {
				return 0
			}
			s, _ := vals[j].(string)
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
		c.Taken += get(0)
		c.Relayed += get(1)
		c.Confirmed += get(2)
		c.Failed += get(3)
		c.Compensated += get(4)
		// Units in transit between shards (a transfer, a reshard, a compensation on a
		// drained shard) are still in Redis: out of one shard, not yet into another.
		c.Remaining += get(5) - get(6)
	}
	return c, nil
}

// Pending is a reservation still PENDING: its id and its record's time (ms or µs since the
// epoch, as written).
type Pending struct {
	ReservationID string
	TS            int64
}

// PendingScan finds the reservations left PENDING. It remembers, per shard, the records up
// to which every one is settled (CONFIRMED, FAILED or gone), so each call reads only the
// records after those. Safe for concurrent use.
type PendingScan struct {
	rdb redis.UniversalClient
	l   *Ledger
	mu  sync.Mutex
	low map[string]int64 // journal key -> records 1..low are settled
}

// NewPendingScan returns a scan that starts at each shard's first record.
func (l *Ledger) NewPendingScan() *PendingScan {
	return &PendingScan{rdb: l.rdb, l: l, low: map[string]int64{}}
}

// Old returns the activity's PENDING reservations older than age (by Redis time), over
// every shard of every epoch.
func (p *PendingScan) Old(ctx context.Context, activityID string, age time.Duration) ([]Pending, error) {
	_, lays, err := p.l.layouts(ctx, activityID)
	if err != nil {
		return nil, err
	}
	t, err := p.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("inventory: redis time: %w", err)
	}
	nowMs := t.UnixMilli()
	var out []Pending
	for _, lay := range lays {
		for i := 0; i < lay.Shards; i++ {
			out, err = p.shard(ctx, Shard(activityID, lay.Epoch, i), nowMs, age, out)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// tsMillis reads a record timestamp written in ms or µs since the epoch.
func tsMillis(ts int64) int64 {
	if ts > 1e14 {
		return ts / 1000
	}
	return ts
}

func (p *PendingScan) shard(ctx context.Context, k ShardKeys, nowMs int64, age time.Duration, out []Pending) ([]Pending, error) {
	top, err := p.rdb.Get(ctx, k.Seq()).Int64()
	if errors.Is(err, redis.Nil) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("inventory: read %s: %w", k.Seq(), err)
	}
	p.mu.Lock()
	low := p.low[k.Journal()]
	p.mu.Unlock()
	const chunk = 500
	settledTo := low
	contiguous := true
	for from := low + 1; from <= top; from += chunk {
		to := min(from+chunk-1, top)
		vals, err := p.rdb.HMGet(ctx, k.Users(), recordFields(from, to)...).Result()
		if err != nil {
			return out, fmt.Errorf("inventory: read records: %w", err)
		}
		for j, v := range vals {
			n := from + int64(j)
			if r, ok := recordOf(v); ok && r.Status == "PENDING" {
				contiguous = false
				if nowMs-tsMillis(r.TS) >= age.Milliseconds() {
					out = append(out, Pending{ReservationID: r.ReservationID, TS: r.TS})
				}
				continue
			}
			if contiguous {
				settledTo = n
			}
		}
	}
	p.mu.Lock()
	p.low[k.Journal()] = settledTo
	p.mu.Unlock()
	return out, nil
}
