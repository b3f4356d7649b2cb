package inventory

import (
	"context"
	"sync"
	"time"
)

// The reservation script runs on every admitted request, so its command is built with as
// few allocations as possible: what does not change per request is boxed into interface
// values once (per layout shard, per activity, per limit configuration), the per-request
// strings travel as pointers into a pooled reserveCall, and the command goes to Redis
// whole (EVALSHA sha numkeys KEYS... ARGV...), as Script.Run would write it. The values
// keep the Go types the script was called with before, so the bytes on the wire are the
// same.

// shardArgs is one layout shard's part of a reservation call: its six keys (stock, users,
// seq, journal, stats, generation), the epoch and the shard's number.
type shardArgs struct {
	keys        [6]any
	epoch, home any
}

func newShardArgs(keys []ShardKeys, epoch int) []shardArgs {
	out := make([]shardArgs, len(keys))
	for i, k := range keys {
		out[i] = shardArgs{keys: [6]any{k.Stock(), k.Users(), k.Seq(), k.Journal(), k.Stats(), k.Gen()},
			epoch: epoch, home: i}
	}
	return out
}

// entryArgs are an activity's arguments of the reservation script. An entry's definition
// never changes, nor do the Store's options, so they are built once per entry, and again
// when an operator ends the sale (entry.setEnded).
type entryArgs struct {
	activity, perUser, opens, closes any
	ended                            int64 // entry.ended they were built with
}

func (s *Store) entryArgs(e *entry) *entryArgs {
	ended := e.ended.Load()
	if a := e.reserveArgs.Load(); a != nil && a.ended == ended {
		return a
	}
	// Racing builders make equal values for one end; one built before an end was recorded is
	// refused by the check above and built again.
	a := &entryArgs{ended: ended, activity: e.def.ID, perUser: e.def.PerUserLimit, opens: unixMs(e.def.OpensAt),
		closes: unixMs(e.closesAt())}
	e.reserveArgs.Store(a)
	return a
}

// userLimitArgs are the per-user limits of a request (rate, burst, window, window max), as
// given and boxed as the script takes them. They come from the live configuration, which
// rarely changes: the entry keeps the last ones.
type userLimitArgs struct {
	rate   float64
	burst  int
	window time.Duration
	max    int
	boxed  [4]any
}

func (e *entry) userLimitArgs(r *ReserveRequest) *[4]any {
	if a := e.userLimits.Load(); a != nil && a.rate == r.UserRate.Rate && a.burst == r.UserRate.Burst &&
		a.window == r.Window && a.max == r.WindowMax {
		return &a.boxed
	}
	a := &userLimitArgs{rate: r.UserRate.Rate, burst: r.UserRate.Burst, window: r.Window, max: r.WindowMax,
		boxed: [4]any{r.UserRate.Rate, max(r.UserRate.Burst, 1), r.Window.Milliseconds(), r.WindowMax}}
	e.userLimits.Store(a)
	return &a.boxed
}

// ipLimitArgs is the per-IP bucket of a request (rate, burst), kept as userLimitArgs.
type ipLimitArgs struct {
	rate  float64
	burst int
	boxed [2]any
}

func (e *entry) ipLimitArgs(r *ReserveRequest) *[2]any {
	if a := e.ipLimits.Load(); a != nil && a.rate == r.IPRate.Rate && a.burst == r.IPRate.Burst {
		return &a.boxed
	}
	a := &ipLimitArgs{rate: r.IPRate.Rate, burst: r.IPRate.Burst, boxed: [2]any{r.IPRate.Rate, max(r.IPRate.Burst, 1)}}
	e.ipLimits.Store(a)
	return &a.boxed
}

// reserveCall is one reservation script command. The per-request strings live in its
// fields and the command points at them, so they are not boxed. It is pooled: it goes back
// only after Process has returned, when go-redis has written the command and read the
// reply (the reply's values are new strings, not these) and keeps no reference to it.
type reserveCall struct {
	user, uh, idf, ipKey string
	qty                  int
	floor                int64   // the highest number this instance handed out or read on the shard
	call                 int64   // this call's number in the process (keys.go ReservationID)
	mark                 *string // the shard's generation mark the call carries
	args                 []any
}

var reserveCalls = sync.Pool{New: func() any { return &reserveCall{args: make([]any, 0, 3+7+20)} }}

// reserveCallFor builds the reservation command of r on shard home of l. withIP adds the
// IP bucket key and its limits.
func (s *Store) reserveCallFor(e *entry, l *layout, home int, r *ReserveRequest, uh, idf string, withIP bool) *reserveCall {
	c := reserveCalls.Get().(*reserveCall)
	ea, sa, ul := s.entryArgs(e), &l.args[home], e.userLimitArgs(r)
	c.user, c.uh, c.idf, c.qty = r.UserID, uh, idf, r.Quantity
	a := append(c.args[:0], "evalsha", s.reserve.hash, len(sa.keys))
	a = append(a, sa.keys[:]...)
	if withIP {
		c.ipKey = r.IPKey
		a[2] = len(sa.keys) + 1
		a = append(a, &c.ipKey)
	}
	gen := l.mark(home, e) // a *string, written as its string (no boxing per call)
	c.mark = gen
	c.floor = l.floorOf(home)
	c.call = s.calls.Add(1)
	a = append(a, ea.activity, &c.user, &c.uh, &c.qty, ea.perUser, ea.opens, ea.closes,
		ul[0], ul[1], ul[2], ul[3], &c.idf, sa.epoch, sa.home, gen, &c.floor, s.issuer, &c.call)
	if withIP {
		ip := e.ipLimitArgs(r)
		a = append(a, ip[0], ip[1])
	}
	c.args = a
	return c
}

// noGeneration is the generation argument of an entry whose meta has none (an activity of
// before generations): the script does not check it. Never written.
var noGeneration = ""

// release returns c to the pool; c must not be used after.
func (c *reserveCall) release() {
	clear(c.args)
	c.args = c.args[:0]
	c.user, c.uh, c.idf, c.ipKey, c.qty, c.floor, c.call, c.mark = "", "", "", "", 0, 0, 0, nil
	reserveCalls.Put(c)
}

// runCall runs the script command args (EVALSHA sha numkeys keys... argv..., keys
// present) as Store.run runs a script: EVAL with the source when Redis lost the script,
// and the same metrics and answer.
func (s *Store) runCall(ctx context.Context, sc *script, args []any) ([]any, error) {
	start := time.Now()
	v, err := s.opts.Durability.evalArgs(ctx, s.rdb, sc.s, args).Result()
	return sc.answerOf(v, err, start)
}
