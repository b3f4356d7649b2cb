package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
)

// A sale has an end. An operator ends it (End: from then on every instance answers it closed,
// whatever its closesAt said) and, once its orders are all in MySQL, archives it: MySQL marks
// the row archived and keeps the final counts, then Purge deletes the activity's Redis keys.
// The catalog (MySQL's activities, generation.go) no longer names an archived activity, so a
// Redis without its keys is no loss: an instance drops it instead of putting it in the
// recovering state. The app owns the MySQL side and the order of the steps (app/lifecycle.go).

// EndSettle is how long after its end (or its closesAt) by Redis's clock a sale counts as
// settled: every instance applied the end by then (a refresh reads meta every 250 ms), so a
// drain read after it counts every reservation taken before the end.
const EndSettle = 2 * time.Second

// Ended is the end of a sale as Redis holds it.
type Ended struct {
	At time.Time // the end that stands (zero: none, the sale only closed by its closesAt)
	// Settled: the end was written, or closesAt passed, EndSettle ago or more (Redis TIME).
	Settled bool
}

// End ends the activity's sale at at (to the ms; zero: only read) in Redis: meta's "ended",
// unless the sale was ended earlier, which stands. This instance applies it before End
// returns, every other one on the "layout" event published here or at its next refresh
// (within RefreshEvery). ErrNotFound when Redis has no meta of the activity.
func (s *Store) End(ctx context.Context, id string, at time.Time) (Ended, error) {
	if !keyspace.ValidName(id) {
		return Ended{}, ErrNotFound
	}
	res, err := s.run(ctx, s.end, []string{Meta(id)}, unixMs(at), EndSettle.Milliseconds())
	if err != nil {
		return Ended{}, err
	}
	if n, ok := asInt(res[0]); ok && n == 0 && len(res) == 1 {
		return Ended{}, ErrNotFound // {0}: no meta
	}
	var ms, settled int64
	if len(res) == 3 {
		ms, _ = asInt(res[1])
		settled, _ = asInt(res[2])
	}
	if n, _ := asInt(res[0]); n != 1 || len(res) != 3 || ms < 0 {
		return Ended{}, fmt.Errorf("inventory: end script: unexpected answer %v", res)
	}
	if e := s.cached(id); e != nil && ms > 0 {
		e.setEnded(ms) // this instance refuses from now on; the others at the event or a refresh
	}
	if !at.IsZero() {
		if err := s.rdb.Publish(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "layout "+id).Err(); err != nil {
			s.log.Debug("publishing the end failed; instances apply it at their next refresh", "activity", id, "err", err)
		}
	}
	return Ended{At: fromMs(ms), Settled: settled == 1}, nil
}

// Restoring reports whether a restore of the activity holds its lock (an end or an archive
// waits for it: the restore rewrites meta from the MySQL row it read at its start).
func (s *Store) Restoring(ctx context.Context, id string) (bool, error) {
	n, err := s.rdb.Exists(ctx, RestoreLockKey(id)).Result()
	return n == 1, err
}

// Archived tells every instance that MySQL archived the activity (the system of record no
// longer expects it in Redis): each drops its cached entry, recovering or not, and answers
// it unknown. The caller (the archive) has marked the row archived before.
func (s *Store) Archived(ctx context.Context, id string) error {
	s.archived(ctx, id)
	return s.rdb.Publish(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "archived "+id).Err()
}

// archived drops the activity from this instance: it leaves the catalog (MySQL no longer names
// it; a whole read is never the answer to one id), the entry and its series go, and the id is
// remembered unknown.
func (s *Store) archived(_ context.Context, id string) {
	s.uncatalog(id)
	if e := s.cached(id); e != nil && e.recovering.Load() != nil {
		s.log.Info("activity archived while recovering: no longer expected in Redis", "activity", id)
	}
	s.drop(id)
	s.neg.Put(id, struct{}{}, time.Now().Add(negativeTTL))
}

// uncatalog removes id from the last catalog read (MySQL no longer names it).
func (s *Store) uncatalog(id string) {
	for {
		cur := s.catalog.Load()
		if cur == nil {
			return
		}
		if _, ok := (*cur)[id]; !ok {
			return
		}
		m := make(map[string]Activity, len(*cur))
		for k, v := range *cur {
			if k != id {
				m[k] = v
			}
		}
		if s.catalog.CompareAndSwap(cur, &m) {
			return
		}
	}
}

// cached is the cached entry of id, nil when none.
func (s *Store) cached(id string) *entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.acts[id]
}

// purgeBatch is how many keys one pipeline of Purge deletes.
const purgeBatch = 500

// archivedMarkTTL is how long the archive's mark (ArchivedKey) stays: an instance that missed
// the archive's event finds it within its next refresh, or a 10 s recheck while recovering.
const archivedMarkTTL = 7 * 24 * time.Hour

// Purge deletes every Redis key of the activity: its meta and activity-wide keys (tag {id}:
// tokens, the funnel, the waiting room's line, the restore job) and every key of every layout
// it ever had (tags {id:e:i}: stock, users, journals, reservation records), found by SCAN on
// every master; the activity leaves the activity and journal sets first, so no background
// pass addresses it while its keys go, and the archive's mark (ArchivedKey) is written before
// anything is deleted, so an instance that finds the keys gone finds the mark too. It
// returns the number of keys deleted. Only an
// archived activity (MySQL archived the row, Archived told the instances) may be purged:
// a live one would be recreated by nothing and lost for good.
func (s *Store) Purge(ctx context.Context, id string) (int, error) {
	if !keyspace.ValidName(id) {
		return 0, ErrNotFound
	}
	journals, err := s.rdb.SMembers(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals)).Result()
	if err != nil {
		return 0, fmt.Errorf("inventory: read journal set: %w", err)
	}
	pipe := s.rdb.Pipeline()
	pipe.Set(ctx, ArchivedKey(id), time.Now().UnixMilli(), archivedMarkTTL)
	pipe.SRem(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Activities), id)
	for _, j := range journals {
		if strings.HasPrefix(j, keyspace.Prefix+"{"+id+":") {
			pipe.SRem(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals), j)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("inventory: leave the activity sets: %w", err)
	}
	// The activity-wide keys (tag {id}) and the shards' (tags {id:<epoch>:<shard>}); the
	// second pattern also matches other owners' tags that start with the id and a colon (an
	// activity named "ip" and the per-IP buckets, sk:{ip:<hash>}:tk), so each key it finds is
	// deleted only when its tag is a shard's (ownedBy).
	patterns := []string{keyspace.Prefix + "{" + id + "}:*", keyspace.Prefix + "{" + id + ":*"}
	deleted := 0
	purge := func(ctx context.Context, c *redis.Client) error {
		for _, p := range patterns {
			n, err := purgeMatching(ctx, c, p, func(k string) bool { return k != ArchivedKey(id) && ownedBy(k, id) })
			deleted += n
			if err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		var mu = make(chan struct{}, 1)
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu <- struct{}{} // one master at a time: deleted is shared
			defer func() { <-mu }()
			return purge(ctx, m)
		})
	} else if c, ok := s.rdb.(*redis.Client); ok {
		err = purge(ctx, c)
	} else {
		err = errors.New("inventory: purge needs a Redis client or a Cluster client")
	}
	if err != nil {
		return deleted, fmt.Errorf("inventory: purge %s: %w", id, err)
	}
	s.drop(id)
	return deleted, nil
}

// ownedBy reports whether key is one of the activity's: tag {id}, or a shard's tag
// {id:<epoch>:<shard>}.
func ownedBy(key, id string) bool {
	rest, ok := strings.CutPrefix(key, keyspace.Prefix+"{"+id)
	if !ok {
		return false
	}
	if strings.HasPrefix(rest, "}:") {
		return true
	}
	tag, _, ok := strings.Cut(rest, "}:")
	if !ok || !strings.HasPrefix(tag, ":") {
		return false
	}
	e, sh, ok := strings.Cut(tag[1:], ":")
	return ok && digits(e, 10) && digits(sh, 10)
}

// purgeMatching deletes the keys of one node that match pattern and del, a batch per SCAN
// page (UNLINK one key at a time, pipelined: on a Cluster node the keys of a page span slots).
func purgeMatching(ctx context.Context, c *redis.Client, pattern string, del func(string) bool) (int, error) {
	var cursor uint64
	deleted := 0
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, purgeBatch).Result()
		if err != nil {
			return deleted, err
		}
		if len(keys) > 0 {
			pipe := c.Pipeline()
			n := 0
			for _, k := range keys {
				if del(k) {
					pipe.Unlink(ctx, k)
					n++
				}
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return deleted, err
			}
			deleted += n
		}
		if next == 0 {
			return deleted, nil
		}
		cursor = next
	}
}
