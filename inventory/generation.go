package inventory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis that lost data (restarted empty, failed over to a replica that lagged, rolled back
// to an older AOF) must never sell a unit twice. Each activity carries a generation: a random
// id minted when its Redis state is made (Create, then each Restore), kept in the meta field
// "gen" and in its MySQL row. The refresh loop compares what Redis holds with what the
// system of record (Options.Catalog, MySQL) knows; an activity MySQL knows whose metadata is
// gone, whose generation differs, or one of whose current shards lost its stock key is put in
// the recovering state: reservations are refused (ErrRecovering), the cached view says so,
// and nothing is re-created by itself. Only Restore (restore.go) leaves the state: the
// recovering mark of an instance is cleared when MySQL names a generation other than the one
// it had when the loss was seen and the metadata carries that generation.

// ErrRecovering is the answer for an activity whose Redis state was lost: it stays refused
// until an operator restores it from MySQL (Restore).
var ErrRecovering = errors.New("inventory: activity is recovering: its Redis state was lost, restore it from MySQL")

// Catalog lists the activities the system of record (MySQL) knows, each with its generation
// (Activity.Generation, "" for a row written before generations existed). Implementations
// must be safe for concurrent use.
type Catalog interface {
	Known(ctx context.Context) ([]Activity, error)
	// One is the activity id as MySQL knows it; false when MySQL has no such activity.
	One(ctx context.Context, id string) (Activity, bool, error)
}

// catalogOne is the catalog's entry of id: the last read's, else MySQL's row of id read alone
// (an activity created since the last read, the common case of a sale created on a running
// fleet), which is then added to the catalog so later passes find it without MySQL. found is
// false when MySQL has no such row; err is not nil when MySQL could not be asked (nothing is
// known then: a caller that would decide on the answer decides nothing). A miss or a failed
// read is remembered for catalogEvery. A whole read of the catalog costs a scan of every
// activity MySQL ever knew, so it is never the answer to one id.
func (s *Store) catalogOne(ctx context.Context, id string) (k Activity, found bool, err error) {
	if s.opts.Catalog == nil {
		return Activity{}, false, nil
	}
	if k, ok := s.lastCatalog()[id]; ok {
		return k, true, nil
	}
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	if m, ok := s.catalogMiss[id]; ok && time.Since(m.at) < catalogEvery {
		return Activity{}, false, m.err
	}
	k, ok, err := s.opts.Catalog.One(ctx, id)
	if err != nil || !ok {
		if s.catalogMiss == nil || len(s.catalogMiss) > 10_000 {
			s.catalogMiss = map[string]catalogMiss{}
		}
		if err != nil {
			err = fmt.Errorf("inventory: read the catalog's row of %s: %w", id, err)
		}
		s.catalogMiss[id] = catalogMiss{at: time.Now(), err: err}
		return Activity{}, false, err
	}
	delete(s.catalogMiss, id)
	cur := s.catalog.Load()
	m := make(map[string]Activity, 1)
	if cur != nil {
		m = make(map[string]Activity, len(*cur)+1)
		for i, a := range *cur {
			m[i] = a
		}
	}
	m[id] = k
	s.catalog.CompareAndSwap(cur, &m) // lost to a whole read: that read has the row too
	return k, true, nil
}

// catalogMiss is a read of one catalog row that found none (err nil) or failed (err), at at.
type catalogMiss struct {
	at  time.Time
	err error
}

// catalogEvery is how often, at most, the refresh reads the catalog again: only when Redis
// misses something a cached entry had (a suspected loss) or the meta of a recovering activity
// names a generation not seen before (a restore whose event was lost); a restore's event forces
// a read. In steady state (a sale under way, sold out, or recovering) the catalog is not read:
// nothing reaches MySQL.
const catalogEvery = time.Second

// IncarnationEpochs is the epoch range of one incarnation: incarnation i (the i-th restore)
// builds its layout at epoch i * IncarnationEpochs, above every epoch (reshards included) of
// the incarnations before, so reservation ids (activity.epoch.shard.n) and shard keys never
// repeat whatever Redis forgot.
const IncarnationEpochs = 1_000_000

// Incarnation is the incarnation of an epoch.
func Incarnation(epoch int) int { return epoch / IncarnationEpochs }

// recovering is why an activity is refused, and the generation MySQL named then.
type recovering struct {
	reason string
	gen    string // the catalog's generation when the loss was seen
	since  time.Time
	// fenced: this instance wrote the rolled-back fence (fenceRolledBack); the refresh writes
	// it again when meta's node loses it (refence).
	fenced atomic.Bool
}

// NewGeneration returns a fresh generation id (16 hex digits).
func NewGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// catalogRead says when loadCatalog reads the catalog.
type catalogRead int

const (
	catalogCached catalogRead = iota // only when it was never read
	catalogDue                       // when the last read is catalogEvery old
	catalogForce                     // now
)

// loadCatalog reads the catalog as when says and returns the last good one (nil when there
// is no catalog or it was never read). A failing read keeps the last good one and is logged
// once per failure streak.
func (s *Store) loadCatalog(ctx context.Context, when catalogRead) map[string]Activity {
	if s.opts.Catalog == nil {
		return nil
	}
	cur := s.catalog.Load()
	at, _ := s.catalogAt.Load().(time.Time)
	if cur != nil && (when == catalogCached || when == catalogDue && time.Since(at) < catalogEvery) {
		return *cur
	}
	acts, err := s.opts.Catalog.Known(ctx)
	if err != nil {
		if !s.catalogFailing.Swap(true) && ctx.Err() == nil {
			s.log.Warn("reading the activity catalog failed; the last one read stands", "err", err)
		}
		if cur == nil {
			return nil
		}
		return *cur
	}
	s.catalogFailing.Store(false)
	m := make(map[string]Activity, len(acts))
	for _, a := range acts {
		m[a.ID] = a
	}
	s.catalogAt.Store(time.Now())
	s.catalog.Store(&m)
	return m
}

// lostReason says why Redis no longer holds the state MySQL knows (k) for an activity, or
// "": m/ok is the meta read, e the cached entry (nil if none).
func lostReason(m meta, ok bool, k Activity, e *entry) string {
	if !ok {
		return "metadata missing"
	}
	want := k.Generation
	if want == "" && e != nil {
		want = e.generation() // a row of before generations: what this instance saw
	}
	if want != "" && m.gen != want {
		return "generation differs"
	}
	return ""
}

// suspect reports whether the meta read of an activity MySQL is not known (to the last
// catalog) to hold is missing something the cached entry had: the catalog must be read again.
func (s *Store) suspect(id string, m meta, ok bool) bool {
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	return e != nil && e.recovering.Load() == nil && lostReason(m, ok, Activity{ID: id}, e) != ""
}

// checkLost compares one activity's meta read with the catalog and returns true when the
// activity is (now or still) recovering, so the caller must not apply the meta. ctx is for a
// read of the catalog when meta names a generation this recovering entry has not seen (nil:
// no read).
func (s *Store) checkLost(ctx context.Context, id string, m meta, ok bool, cat map[string]Activity) bool {
	k, known := cat[id]
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e != nil && ok && ctx != nil && e.recovering.Load() == nil && m.gen == e.generation() {
		if l := e.layout.Load(); m.epoch < l.epoch && s.metaWentBack(ctx, id, l.epoch) {
			// Meta names an epoch below one this instance used: epochs only grow (a reshard
			// adds one, a restore jumps above them all), so meta's node went back past a
			// reshard's switch, and the layout it names holds what the reshard drained and
			// copied away (left alone, the activity is busy for good, never recovering).
			// Fence the layout meta names, so no instance sells from it.
			s.fenceRolledBack(ctx, e, newLayout(id, m.epoch, m.shards),
				fmt.Sprintf("Redis rolled back: meta names epoch %d, this instance used epoch %d", m.epoch, l.epoch))
			return true
		}
	}
	if !known {
		return e != nil && e.recovering.Load() != nil
	}
	if e != nil {
		if r := e.recovering.Load(); r != nil {
			if ok && m.loaded && m.gen == r.gen && r.fenced.Load() && ctx != nil {
				s.refence(ctx, e, m, r)
				return true
			}
			if !ok && ctx != nil && e.recheckDue() {
				if archived, _ := s.archivedMeanwhile(ctx, id); archived {
					return false // an operator archived it (an event this instance missed): dropped
				}
			}
			if !ok || !m.loaded || m.gen == r.gen || m.gen == generationFenced {
				return true
			}
			if k.Generation == r.gen && ctx != nil {
				if prev := e.metaGenSeen.Swap(&m.gen); prev == nil || *prev != m.gen {
					k = s.loadCatalog(ctx, catalogDue)[id] // a restore whose event was lost?
				}
			}
			if k.Generation != r.gen && m.gen == k.Generation {
				return false // restored: apply clears the mark (clearRecovering)
			}
			return true
		}
	}
	if reason := lostReason(m, ok, k, e); reason != "" {
		if !ok {
			archived, err := s.archivedMeanwhile(ctx, id)
			if archived {
				return false // archived, its keys deleted: no loss
			}
			if err != nil {
				return true // not told: nothing applied, nothing decided on this pass
			}
		}
		s.setRecovering(k, e, reason)
		return true
	}
	return false
}

// archivedMeanwhile reports whether the activity was archived although the last catalog read
// named it (this instance missed the event, lifecycle.go), and forgets it then: one read of
// the archive's mark in Redis (ArchivedKey), made only when Redis misses the activity's state
// (nil ctx: none). MySQL is not asked: a sale's background must cost MySQL nothing. An error
// of the read is returned: the caller decides nothing on this pass.
func (s *Store) archivedMeanwhile(ctx context.Context, id string) (bool, error) {
	if ctx == nil {
		return false, nil
	}
	if n, err := s.rdb.Exists(ctx, ArchivedKey(id)).Result(); err != nil || n == 0 {
		return false, err
	}
	s.log.Info("activity archived: no longer expected in Redis", "activity", id)
	s.uncatalog(id)
	return true, nil
}

// archiveRecheck is how often, at most, a recovering activity whose meta is gone looks for the
// archive's mark.
const archiveRecheck = 10 * time.Second

// recheckDue reports whether a recovering entry may look for the archive's mark again
// (archivedMeanwhile).
func (e *entry) recheckDue() bool {
	now := time.Now().UnixNano()
	last := e.archiveChecked.Load()
	return now-last >= int64(archiveRecheck) && e.archiveChecked.CompareAndSwap(last, now)
}

// metaWentBack reads meta again and reports whether it names an epoch below epoch, one this
// instance applied: a read of meta that started before the switch to epoch may be answered
// after another read applied it, so only a read started after epoch was applied proves it.
func (s *Store) metaWentBack(ctx context.Context, id string, epoch int) bool {
	vals, err := s.rdb.HMGet(ctx, Meta(id), metaFields...).Result()
	if err != nil {
		return false
	}
	m, ok, err := parseMeta(id, vals)
	return err == nil && ok && m.epoch < epoch
}

// setRecovering puts the activity in the recovering state (creating its cached entry from
// the catalog's definition when Redis has none), with one log line.
func (s *Store) setRecovering(k Activity, e *entry, reason string) {
	if e == nil {
		s.mu.Lock()
		if e = s.acts[k.ID]; e == nil {
			e = s.newEntryLocked(k, 0, k.Shards)
			e.remaining.Store(0)
		}
		s.mu.Unlock()
	}
	r := &recovering{reason: reason, gen: k.Generation, since: time.Now()}
	if e.recovering.CompareAndSwap(nil, r) {
		// Report the numbers handed out now, not only at the refresh's next pass: the loop
		// that runs it may be held up (a long pass, a settling pass against a Redis that was
		// down). A sale whose answer was still on its way may add one after this; the
		// refresh passes report it (the script keeps the larger number).
		if e.handedOut() {
			s.reports.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
				defer cancel()
				s.reportIssued(ctx, k.ID)
			})
		}
		s.m.recovering.WithLabelValues(k.ID).Set(1)
		s.log.Error("activity recovering: Redis lost its state; reservations are refused until it is restored from MySQL",
			"activity", k.ID, "reason", reason, "generation", k.Generation,
			"restore", "POST /admin/v1/activities/"+k.ID+"/restore")
	}
}

// clearRecovering ends the recovering state of e (a restore was applied).
func (s *Store) clearRecovering(e *entry) {
	if r := e.recovering.Swap(nil); r != nil {
		s.m.recovering.WithLabelValues(e.def.ID).Set(0)
		s.log.Info("activity restored: reservations open again", "activity", e.def.ID,
			"generation", e.generation(), "recoveringFor", time.Since(r.since).Round(time.Millisecond).String())
	}
}

// shardLost confirms that a shard of the current layout of e whose stock key was missing is
// lost, not closed by a reshard that started after the meta read: meta still names that
// layout, unchanged and not resharding, and either its drained key is absent too, or it is
// present and a read of meta made after it still names the layout. A reshard records itself
// in meta before it drains a shard and moves meta's epoch on when it clears that record, so
// a drained shard of the epoch meta names outside a reshard is a meta that went back past a
// reshard's switch (an instance that applied the later epoch sees it by its own record,
// checkLost; one that never did sees it only here: TestMetaBackPastAReshardOnAFreshInstance).
// The second read is made after the first pipeline's answer: on a Cluster, the pipeline's meta
// read may run before its EXISTS.
func (s *Store) shardLost(ctx context.Context, e *entry, l *layout, shard int) (bool, error) {
	k := l.keys[shard]
	pipe := s.rdb.Pipeline()
	st := pipe.Exists(ctx, k.Stock())
	dr := pipe.Exists(ctx, k.Drained())
	mv := pipe.HMGet(ctx, Meta(e.def.ID), metaFields...)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if st.Val() != 0 {
		return false, nil
	}
	vals := mv.Val()
	if dr.Val() != 0 {
		var err error
		if vals, err = s.rdb.HMGet(ctx, Meta(e.def.ID), metaFields...).Result(); err != nil {
			return false, err
		}
	}
	m, ok, err := parseMeta(e.def.ID, vals)
	if err != nil || !ok {
		return !ok && err == nil, err // meta gone too: the next pass says so
	}
	return m.epoch == l.epoch && !m.resharding && m.gen == e.generation(), nil
}

// Recovering returns the ids of the activities this instance holds in the recovering state,
// sorted, with the reason of each.
func (s *Store) Recovering() ([]string, map[string]string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
	why := map[string]string{}
	for id, e := range s.acts {
		if r := e.recovering.Load(); r != nil {
			ids = append(ids, id)
			why[id] = r.reason
		}
	}
	sort.Strings(ids)
	return ids, why
}

// Generation reads the activity's generation from Redis meta (not the cache): ok is false
// when there is no meta.
func (s *Store) Generation(ctx context.Context, id string) (string, bool, error) {
	vals, err := s.rdb.HMGet(ctx, Meta(id), "def", "gen").Result()
	if err != nil {
		return "", false, fmt.Errorf("inventory: read meta: %w", err)
	}
	if vals[0] == nil {
		return "", false, nil
	}
	return asString(vals[1]), true, nil
}

// generation is the generation of the cached entry ("" when meta had none).
func (e *entry) generation() string {
	if g := e.gen.Load(); g != nil {
		return *g
	}
	return ""
}

// noteIssued records that this instance handed out reservation rid on shard i of l. A
// keyless replay after a reshard answers the binding its first attempt made on the old
// layout; that number is another shard's, and counting it here would refuse the new shard's
// own next number as rolled back.
func (l *layout) noteIssued(i int, rid string) {
	k, n, ok := ParseReservationID(rid)
	if !ok || k.Epoch != l.epoch || k.Shard != i {
		return
	}
	for {
		cur := l.issued[i].Load()
		if n <= cur || l.issued[i].CompareAndSwap(cur, n) {
			return
		}
	}
}

// noteReplayed records that this instance answered reservation rid as a replay of an
// idempotency key: the buyer holds it as a 202 whatever became of the first answer (lost with
// its instance, or answered OUTCOME_UNKNOWN), so it counts as handed out here, on the layout
// its epoch names (the current one or one a reshard replaced).
func (e *entry) noteReplayed(rid string) {
	k, n, ok := ParseReservationID(rid)
	if !ok || k.Activity != e.def.ID {
		return
	}
	note := func(l *layout) bool {
		if l.epoch != k.Epoch {
			return false
		}
		if k.Shard >= 0 && k.Shard < len(l.issued) {
			l.noteIssued(k.Shard, rid)
		}
		return true
	}
	if note(e.layout.Load()) {
		return
	}
	e.pastMu.Lock()
	for _, l := range e.past {
		if note(l) {
			e.pastMu.Unlock()
			return
		}
	}
	e.pastMu.Unlock()
	// A layout this instance never held (replaced before it started, or being replaced now:
	// apply lists the old layout in past just after the swap): kept by (epoch, shard).
	if k.Shard < 0 || k.Epoch < 0 {
		return
	}
	es := [2]int{k.Epoch, k.Shard}
	e.answeredMu.Lock()
	if e.answered == nil {
		e.answered = map[[2]int]int64{}
	}
	e.answered[es] = max(e.answered[es], n)
	e.answeredMu.Unlock()
}

// reportRecovering reports the numbers handed out on every activity this instance holds in
// the recovering state (reportIssued). Refresh runs it at the end of each pass, including a
// pass that failed: a key the pass cannot read (another activity's meta of the wrong type, a
// pipeline that timed out) must not keep this instance's numbers from a restore.
func (s *Store) reportRecovering(ctx context.Context) {
	// Bounded: after a pass that failed on a Redis that hangs, one timeout for the lot, not
	// one per activity.
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	var ids []string
	s.mu.RLock()
	for id, e := range s.acts {
		if e.recovering.Load() != nil && e.handedOut() {
			ids = append(ids, id)
		}
	}
	s.mu.RUnlock()
	for _, id := range ids {
		s.reportIssued(ctx, id)
	}
}

// handedOut reports whether this instance handed out a reservation number on any layout of e
// (an activity it only knows from the catalog has none to report).
func (e *entry) handedOut() bool {
	some := func(l *layout) bool {
		for i := range l.issued {
			if l.issued[i].Load() > 0 {
				return true
			}
		}
		return false
	}
	if some(e.layout.Load()) {
		return true
	}
	e.pastMu.Lock()
	for _, l := range e.past {
		if some(l) {
			e.pastMu.Unlock()
			return true
		}
	}
	e.pastMu.Unlock()
	e.answeredMu.Lock()
	defer e.answeredMu.Unlock()
	return len(e.answered) > 0
}

// reportTimeout bounds one round of reports (reportRecovering, or the one setRecovering starts).
const reportTimeout = 2 * time.Second

// reportIssued writes this instance's highest reservation number per shard of every layout
// it used into IssuedKey, for the restore's list of reservations lost with Redis. It runs on
// each refresh while the activity is recovering (Redis may lose the report again).
func (s *Store) reportIssued(ctx context.Context, id string) {
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e == nil {
		return
	}
	e.pastMu.Lock()
	lays := append([]*layout{e.layout.Load()}, e.past...)
	e.pastMu.Unlock()
	high := map[[2]int]int64{}
	for _, l := range lays {
		for i := range l.issued {
			if n := l.issued[i].Load(); n > 0 {
				high[[2]int{l.epoch, i}] = max(high[[2]int{l.epoch, i}], n)
			}
		}
	}
	e.answeredMu.Lock()
	for es, n := range e.answered {
		high[es] = max(high[es], n)
	}
	e.answeredMu.Unlock()
	if len(high) == 0 {
		return
	}
	args := make([]any, 0, 2*len(high))
	for es, n := range high {
		args = append(args, strconv.Itoa(es[0])+":"+strconv.Itoa(es[1])+":"+s.opts.InstanceID, n)
	}
	res, err := s.run(ctx, s.issued, []string{IssuedKey(id), ArchivedKey(id)}, args...)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("reporting issued reservation numbers failed", "activity", id, "err", err)
		}
		return
	}
	if n, _ := asInt(res[0]); n == 0 {
		s.log.Info("activity archived: no longer expected in Redis", "activity", id)
		s.archived(ctx, id) // an archive whose event this instance missed
	}
}
