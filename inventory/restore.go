package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
)

// A restore rebuilds an activity's Redis state from MySQL (the orders) after Redis lost it.
// The order package runs the steps (order/restore.go); the inventory owns the keys:
//
//  1. Fence: meta's generation is overwritten ("restoring"), so every instance that still
//     held the activity open sees a generation other than MySQL's within one refresh and
//     refuses reservations (a Redis that came back rolled back is fenced the same way); the
//     generation key of every shard meta names is overwritten too, so the reserve script
//     refuses at once, a reservation stalled past the fence included (ShardKeys.Gen).
//     A lock (sk:{A}:restoring) keeps a second restore out.
//  2. The caller waits for the instances, the journals and the queue to drain.
//  3. Rebuild: a new layout at epoch incarnation * IncarnationEpochs, with remaining = stock
//     minus what the orders hold, each user's count, sequence and idempotency bindings on the
//     home shard, the records of the orders (CONFIRMED), and the shards of every older
//     layout closed (stock deleted, drained marker set). Then the new meta is written in one
//     script, and the caller records the new generation in MySQL, which reopens the activity.

// RestoreLockKey is the lock of a restore of the activity.
func RestoreLockKey(activity string) string { return activityKey(activity, "restoring") }

// IssuedKey is the hash where instances report the highest reservation number they handed
// out per shard while the activity is recovering: "<epoch>:<shard>:<instance>" -> n. A
// restore reads it to name the reservations answered 202 that never reached MySQL.
func IssuedKey(activity string) string { return activityKey(activity, "issued") }

// restoreLockTTL bounds how long a crashed restore keeps others out.
const restoreLockTTL = 5 * time.Minute

// generationFenced is the generation a restore in progress leaves in meta.
const generationFenced = "restoring"

// Fence starts a restore of the activity: it takes the restore lock and overwrites meta's
// generation so every instance refuses reservations (see the steps above). It returns the
// lock token for Rebuild, ErrBusy when another restore holds the lock.
func (s *Store) Fence(ctx context.Context, id string) (string, error) {
	if !keyspace.ValidName(id) {
		return "", ErrNotFound
	}
	tok := NewGeneration()
	ok, err := s.rdb.SetNX(ctx, RestoreLockKey(id), tok, restoreLockTTL).Result()
	if err != nil {
		return "", fmt.Errorf("inventory: restore lock: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("%w: a restore of %s is in progress", ErrBusy, id)
	}
	if err := s.rdb.HSet(ctx, Meta(id), "gen", generationFenced).Err(); err != nil {
		return "", fmt.Errorf("inventory: fence meta: %w", err)
	}
	// Fence the shards too: from these writes on, the reserve script refuses every
	// reservation on them, whatever an instance's cache still says (ShardKeys.Gen). A Redis
	// that lost meta names no layout: its shards have no generation and refuse already.
	lays, err := s.OldLayouts(ctx, id)
	if err != nil {
		return "", err
	}
	if len(lays) > 0 {
		pipe := s.rdb.Pipeline()
		for _, l := range lays {
			for i := 0; i < l[1]; i++ {
				pipe.Set(ctx, Shard(id, l[0], i).Gen(), generationFenced, 0)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return "", fmt.Errorf("inventory: fence shards: %w", err)
		}
	}
	return tok, nil
}

// Unlock releases the restore lock taken by Fence when it is still held with tok
// (inventory_restore_unlock.lua).
func (s *Store) Unlock(ctx context.Context, id, tok string) error {
	return s.unlock.Run(ctx, s.rdb, []string{RestoreLockKey(id)}, tok).Err()
}

// RestoredOrder is one MySQL order of the activity, as a restore needs it.
type RestoredOrder struct {
	ReservationID string
	UserID        string
	Quantity      int
	Seq           int
	IdemHash      string // the idempotency key's hash (16 hex digits), "" when unknown
	OrderID       int64
	CreatedAt     time.Time
}

// RestorePlan is what Rebuild writes: the activity as MySQL defines it, the new generation and
// incarnation, the shard count of the new layout and every order.
type RestorePlan struct {
	Activity    Activity
	Generation  string
	Incarnation int
	Shards      int
	Orders      []RestoredOrder
}

// Restored is what Rebuild wrote.
type Restored struct {
	Epoch     int   `json:"epoch"`
	Shards    int   `json:"shards"`
	Sold      int64 `json:"sold"`
	Remaining int64 `json:"remaining"`
	Users     int   `json:"users"`
	Bindings  int   `json:"bindings"`
}

// OldLayouts returns the (epoch, shards) of every layout meta names (none when meta is gone).
func (s *Store) OldLayouts(ctx context.Context, id string) ([][2]int, error) {
	spec, err := s.rdb.HGet(ctx, Meta(id), "layouts").Result()
	if errors.Is(err, redis.Nil) || spec == "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inventory: read layouts: %w", err)
	}
	lays, err := parseLayouts(id, spec)
	if err != nil {
		return nil, nil // unreadable: the epochs of the orders still close their shards
	}
	out := make([][2]int, len(lays))
	for i, l := range lays {
		out[i] = [2]int{l.Epoch, l.Shards}
	}
	return out, nil
}

// IssuedMarks reads the highest reservation number handed out per (epoch, shard) that Redis
// still knows: the instances' reports (IssuedKey) and the sequence counters of the layouts
// meta names.
func (s *Store) IssuedMarks(ctx context.Context, id string, layouts [][2]int) (map[[2]int]int64, error) {
	out := map[[2]int]int64{}
	rep, err := s.rdb.HGetAll(ctx, IssuedKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("inventory: read issued marks: %w", err)
	}
	for f, v := range rep {
		parts := strings.Split(f, ":")
		n, err1 := strconv.ParseInt(v, 10, 64)
		if len(parts) < 2 || err1 != nil {
			continue
		}
		e, err2 := strconv.Atoi(parts[0])
		sh, err3 := strconv.Atoi(parts[1])
		if err2 != nil || err3 != nil {
			continue
		}
		k := [2]int{e, sh}
		out[k] = max(out[k], n)
	}
	for _, l := range layouts {
		for i := 0; i < l[1]; i++ {
			v, err := s.rdb.Get(ctx, Shard(id, l[0], i).Seq()).Int64()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("inventory: read seq: %w", err)
			}
			k := [2]int{l[0], i}
			out[k] = max(out[k], v)
		}
	}
	return out, nil
}

// Rebuild writes the activity's Redis state from plan (steps above) while holding the lock
// tok of Fence; old lists the (epoch, shards) layouts whose shards must be closed. It fails
// when the orders hold more than the stock (nothing is written then).
func (s *Store) Rebuild(ctx context.Context, tok string, plan RestorePlan, old [][2]int) (Restored, error) {
	a := plan.Activity
	if err := validate(Activity{ID: a.ID, CampaignID: a.CampaignID, Stock: a.Stock, PerUserLimit: a.PerUserLimit,
		OpensAt: a.OpensAt, ClosesAt: a.ClosesAt, Shards: plan.Shards}); err != nil {
		return Restored{}, err
	}
	epoch := plan.Incarnation * IncarnationEpochs
	for _, l := range old {
		if l[0] >= epoch {
			return Restored{}, fmt.Errorf("%w: epoch %d of an older layout is not below the restore's %d", ErrInvalid, l[0], epoch)
		}
	}
	users, sold, bindings := s.tallyRestore(plan)
	if sold > a.Stock {
		return Restored{}, fmt.Errorf("%w: the orders hold %d units of a stock of %d", ErrInvalid, sold, a.Stock)
	}
	remaining := a.Stock - sold

	pipe := s.rdb.Pipeline()
	s.queueRebuild(ctx, pipe, plan, old, users, epoch, remaining)
	if _, err := pipe.Exec(ctx); err != nil {
		return Restored{}, fmt.Errorf("inventory: rebuild %s: %w", a.ID, err)
	}
	if err := s.openRebuilt(ctx, tok, plan, epoch); err != nil {
		return Restored{}, err
	}
	return Restored{Epoch: epoch, Shards: plan.Shards, Sold: sold, Remaining: remaining, Users: len(users), Bindings: bindings}, nil
}

// rebuiltUser is what Rebuild gathers of one buyer from the plan's orders: units held,
// highest sequence and its reservation, idempotency bindings, and home shard in the new layout.
type rebuiltUser struct {
	id         string
	count, seq int
	bindings   []string
	shard      int
	uh         string
	lastRID    string
}

// tallyRestore gathers the plan's orders per buyer and returns the buyers, the units sold
// and the number of idempotency bindings; it reads nothing from Redis.
func (s *Store) tallyRestore(plan RestorePlan) (map[string]*rebuiltUser, int64, int) {
	users := map[string]*rebuiltUser{}
	var sold int64
	bindings := 0
	for _, o := range plan.Orders {
		u := users[o.UserID]
		if u == nil {
			uh := s.UserHash(o.UserID)
			u = &rebuiltUser{id: o.UserID, uh: uh, shard: HomeShard(uh, plan.Shards)}
			users[o.UserID] = u
		}
		u.count += o.Quantity
		if o.Seq > u.seq {
			u.seq, u.lastRID = o.Seq, o.ReservationID
		}
		if o.IdemHash != "" {
			u.bindings = append(u.bindings, idemPrefix(u.uh)+o.IdemHash, o.ReservationID)
			bindings++
		}
		sold += int64(o.Quantity)
	}
	return users, sold, bindings
}

// queueRebuild queues on pipe every write of the rebuild before meta: the older shards
// closed with their confirmed records, the new layout's shards reset with their stock and
// buyers, and the user-hash key, journals and activity registered; it runs nothing.
func (s *Store) queueRebuild(ctx context.Context, pipe redis.Pipeliner, plan RestorePlan, old [][2]int, users map[string]*rebuiltUser, epoch int, remaining int64) {
	a := plan.Activity
	// Close every older shard: no instance on an old layout can sell from it again.
	closed := map[[2]int]bool{}
	closeShard := func(e, i int) {
		if closed[[2]int{e, i}] {
			return
		}
		closed[[2]int{e, i}] = true
		k := Shard(a.ID, e, i)
		pipe.Del(ctx, k.Stock())
		pipe.Set(ctx, k.Drained(), 0, 0)
	}
	for _, l := range old {
		for i := 0; i < l[1]; i++ {
			closeShard(l[0], i)
		}
	}
	for _, o := range plan.Orders {
		k, n, ok := ParseReservationID(o.ReservationID)
		if !ok || k.Activity != a.ID {
			continue
		}
		closeShard(k.Epoch, k.Shard)
		rec := Record{Status: "CONFIRMED", Quantity: o.Quantity, TS: o.CreatedAt.UnixMilli(), UserHash: users[o.UserID].uh,
			OrderID: strconv.FormatInt(o.OrderID, 10), ReservationID: o.ReservationID, UserID: o.UserID}
		pipe.HSet(ctx, k.Users(), RecordField(n), rec.String())
	}
	journals := make([]any, plan.Shards)
	for i := 0; i < plan.Shards; i++ {
		k := Shard(a.ID, epoch, i)
		journals[i] = k.Journal()
		pipe.Del(ctx, k.Users(), k.Seq(), k.Stats(), k.Drained(), k.XOut(), k.XIn(), k.Credits(), k.Journal())
		pipe.Set(ctx, k.Stock(), split(remaining, plan.Shards, i), 0)
		pipe.Set(ctx, k.Gen(), plan.Generation, 0)
	}
	for _, u := range users {
		k := Shard(a.ID, epoch, u.shard)
		args := []any{u.uh, UserState{Held: int64(u.count), Seq: int64(u.seq), Last: u.lastRID}.String()}
		for _, b := range u.bindings {
			args = append(args, b)
		}
		pipe.HSet(ctx, k.Users(), args...)
	}
	// A Redis that restarted empty lost the deployment's user-hash key too: put this
	// instance's back (SET NX), so an instance started later hashes users the same way.
	pipe.SetNX(ctx, UserHashKeyName, s.hashKey, 0)
	pipe.SAdd(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals), journals...)
	pipe.SAdd(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Activities), a.ID)
}

// openRebuilt writes the rebuilt activity's meta with the new layout, which opens it, under
// the restore lock tok; a lock expired or taken since fails with ErrBusy.
func (s *Store) openRebuilt(ctx context.Context, tok string, plan RestorePlan, epoch int) error {
	a := plan.Activity
	// The journals' consumer group is made by the relay when it discovers a stream; the meta
	// write is what opens the new layout.
	def, err := json.Marshal(definition{a.ID, a.CampaignID, a.Stock, a.PerUserLimit,
		unixMs(a.OpensAt), unixMs(a.ClosesAt), a.Shards, a.RequireToken})
	if err != nil {
		return err
	}
	rt := 0
	if a.RequireToken {
		rt = 1
	}
	layout := strconv.Itoa(epoch) + ":" + strconv.Itoa(plan.Shards)
	args := []any{tok,
		"def", def, "stock", a.Stock, "perUserLimit", a.PerUserLimit, "opensAt", unixMs(a.OpensAt),
		"closesAt", unixMs(a.ClosesAt), "epoch", epoch, "shards", plan.Shards, "campaignId", a.CampaignID,
		"requireToken", rt, "layouts", layout, "loaded", 1, "gen", plan.Generation}
	if !a.EndedAt.IsZero() {
		args = append(args, "ended", unixMs(a.EndedAt)) // an ended sale stays ended (MySQL's row)
	}
	res, err := s.run(ctx, s.restore, []string{Meta(a.ID), RestoreLockKey(a.ID)}, args...)
	if err != nil {
		return err
	}
	if n, _ := asInt(res[0]); n != 1 {
		return fmt.Errorf("%w: the restore lock of %s was lost (expired or taken)", ErrBusy, a.ID)
	}
	return nil
}

// Announce tells every instance that the activity's Redis state changed (a restore): each
// reads its catalog and meta again at once instead of within the next refresh.
func (s *Store) Announce(ctx context.Context, id string) error {
	s.loadCatalog(ctx, catalogForce)
	if err := s.rdb.Publish(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "restored "+id).Err(); err != nil {
		return fmt.Errorf("inventory: publish restored: %w", err)
	}
	return s.Refresh(ctx)
}

// idemPrefix is the start of a user's idempotency binding fields (idemField).
func idemPrefix(uh string) string { return uh + ":i:" }

// IdemHash is the hash part of the binding field of a user's idempotency key: what an order
// keeps (sql.Order.IdemHash) so a restore rebuilds the binding. "" for "".
func IdemHash(field, uh string) string {
	h, ok := strings.CutPrefix(field, idemPrefix(uh))
	if !ok {
		return ""
	}
	return h
}

// LostKey is the set of the activity's reservations that were answered 202 and never
// reached MySQL, as restores listed them (order/lost.go).
func LostKey(activity string) string { return activityKey(activity, "lost") }

// RestoreJobKey is the hash of the activity's restore job (app/restore.go, app_restorejob.lua):
// one record for the fleet, kept a day after the job ends.
func RestoreJobKey(activity string) string { return activityKey(activity, "restorejob") }
