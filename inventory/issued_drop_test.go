package inventory

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// flakyCatalog is a fakeCatalog whose One fails while fail is set (MySQL unreachable or slow
// for one read).
type flakyCatalog struct {
	fakeCatalog
	fail atomic.Bool
}

func (c *flakyCatalog) One(ctx context.Context, id string) (Activity, bool, error) {
	if c.fail.Load() {
		return Activity{}, false, errors.New("catalog read failed")
	}
	return c.fakeCatalog.One(ctx, id)
}

// sellThenLose sells one unit of activity a through s to user and deletes every key of a (a
// Redis that came back empty), and returns the sale's reservation number.
func sellThenLose(ctx context.Context, t *testing.T, s *Store, rdb redis.UniversalClient, a Activity, user string) int64 {
	t.Helper()
	res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1})
	if err != nil || res.Code != Reserved {
		t.Fatalf("reserve %s: %+v %v", user, res, err)
	}
	_, n, _ := ParseReservationID(res.ReservationID)
	deleteActivityKeys(t, rdb, a.ID)
	return n
}

// reportedMark is the highest number of shard 0, epoch 0 of activity id in the instances'
// reports (what the restore reads).
func reportedMark(ctx context.Context, t *testing.T, s *Store, id string) int64 {
	t.Helper()
	marks, err := s.IssuedMarks(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return marks[[2]int{0, 0}]
}

// TestIssuedMarksSurviveAFailedCatalogRead: an instance sold on an activity created after
// its last catalog read; Redis comes back empty and the one read of the activity's row that
// would confirm the loss fails. The instance must not forget the numbers it handed out: once
// MySQL answers, it reports them for the restore's list of lost reservations.
func TestIssuedMarksSurviveAFailedCatalogRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		cat := &flakyCatalog{}
		s := newStore(t, rdb, Options{Catalog: cat})
		mustRefresh(ctx, t, s) // the catalog read, before the activity exists
		a := mustCreate(t, s, openActivity(t, 10, 1, 1))
		cat.put(a)
		var high int64
		for _, u := range []string{"u1", "u2", "u3"} {
			res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err != nil || res.Code != Reserved {
				t.Fatalf("reserve %s: %+v %v", u, res, err)
			}
			_, n, _ := ParseReservationID(res.ReservationID)
			high = max(high, n)
		}
		deleteActivityKeys(t, rdb, a.ID)
		cat.fail.Store(true)
		mustRefresh(ctx, t, s)
		cat.fail.Store(false) // MySQL answers again
		// The failed read is remembered for catalogEvery; the passes after it ask again.
		for until := time.Now().Add(3 * catalogEvery); ; time.Sleep(50 * time.Millisecond) {
			mustRefresh(ctx, t, s)
			if v, ok := s.Activity(a.ID); ok && v.Recovering {
				break
			} else if time.Now().After(until) {
				t.Fatalf("after the loss: %+v (cached %v), want recovering", v, ok)
			}
		}
		if got := reportedMark(ctx, t, s, a.ID); got < high {
			t.Fatalf("the instance reported %d as its highest number on shard 0, it handed out %d: the restore would not list the lost ones", got, high)
		}
	})
}

// TestReplayedNumbersAreReported: a reservation whose answer was lost (its instance answered
// OUTCOME_UNKNOWN, or restarted) and that the buyer's retry with the same key got from
// another instance as a replay is a number that instance answered 202: it reports it once
// Redis lost the activity, so the restore lists it when its journal entry was lost too.
//
// The retry is answered by the reserve script (a sale still open) or, where admission answers
// before it (sold out, a waiting-room pass, a grab token), by Store.Replay.
func TestReplayedNumbersAreReported(t *testing.T) {
	for _, by := range []string{"script", "Replay"} {
		t.Run(by, func(t *testing.T) { replayedNumberReported(t, by) })
	}
}

func replayedNumberReported(t *testing.T, by string) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		var rid string
		for _, u := range []string{"u1", "u2"} {
			res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1, IdempotencyKey: "k-" + u})
			if err != nil || res.Code != Reserved {
				t.Fatalf("reserve %s: %+v %v", u, res, err)
			}
			rid = res.ReservationID
		}
		// x's answer to u2 was lost, and x with it: u2's retry reaches y.
		if by == "script" {
			res, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1, IdempotencyKey: "k-u2"})
			if err != nil || res.Code != Replayed || res.ReservationID != rid {
				t.Fatalf("the retry on y: %+v %v, want the replay of %s", res, err, rid)
			}
		} else {
			got, found, err := y.Replay(ctx, a.ID, "u2", "k-u2")
			if err != nil || !found || got != rid {
				t.Fatalf("the retry on y: %q %v %v, want the replay of %s", got, found, err, rid)
			}
		}
		_, n, _ := ParseReservationID(rid)
		deleteActivityKeys(t, rdb, a.ID)
		for range 2 {
			mustRefresh(ctx, t, y)
		}
		if v, ok := y.Activity(a.ID); !ok || !v.Recovering {
			t.Fatalf("after the loss: %+v (cached %v), want recovering", v, ok)
		}
		if got := reportedMark(ctx, t, y, a.ID); got < n {
			t.Fatalf("y reported %d as its highest number on shard 0; it answered %d as a replay: the restore would not list it", got, n)
		}
	})
}

// TestIssuedReportedWhenARefreshFails: the reports of a recovering activity do not wait for a
// refresh pass that succeeds: a pass whose meta read fails (the connection drops under it)
// must not keep this instance's numbers from the restore.
func TestIssuedReportedWhenARefreshFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		n := sellThenLose(ctx, t, s, rdb, a, "u1")
		if v, _ := refreshed(ctx, t, s, a.ID); !v.Recovering {
			t.Fatal("not recovering after the loss")
		}
		// The report made when the loss was seen (in the background) lands first, then goes:
		// as if it were lost, so only the failing pass below can write it again.
		s.reports.Wait()
		if got := reportedMark(ctx, t, s, a.ID); got < n {
			t.Fatalf("reported %d once the loss was seen, want %d", got, n)
		}
		if err := rdb.Del(ctx, IssuedKey(a.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		// The pass's meta pipeline fails as a dropped connection fails it: every command.
		var armed atomic.Bool
		armed.Store(true)
		rdb.AddHook(redishook.Hook{Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			if cmds[0].Name() == "hmget" && armed.CompareAndSwap(true, false) {
				err := errors.New("read tcp: connection reset (the test's)")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
			return next(ctx, cmds)
		}})
		if keys, err := s.refresh(ctx); err == nil || keys != nil {
			t.Fatalf("a refresh whose meta read failed: keys %v, failure %v; want the pass failed", keys, err)
		}
		if got := reportedMark(ctx, t, s, a.ID); got < n {
			t.Fatalf("after a failing refresh pass the report reads %d, the instance handed out %d", got, n)
		}
	})
}

// TestIssuedReportedWhenTheLossIsSeen: an instance that sees the loss on a reservation
// (without a refresh pass) reports its numbers then: a refresh loop held up elsewhere (a slow
// pass over many activities, a settling pass against a Redis that was down) must not leave
// the restore without them.
func TestIssuedReportedWhenTheLossIsSeen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		n := sellThenLose(ctx, t, s, rdb, a, "u1")
		if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("reserve after the loss: %v, want ErrRecovering", err)
		}
		var got int64
		for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
			if got = reportedMark(ctx, t, s, a.ID); got >= n {
				return
			}
		}
		t.Fatalf("2 s after the instance saw the loss its report reads %d; it handed out %d", got, n)
	})
}

// TestIssuedReportNeverGoesBack: a report keeps the larger number of a field, so a report
// that lands after a later one (the one made when the loss was seen, a refresh pass's), or
// one of a process restarted under the same id, never lowers what the restore reads.
func TestIssuedReportNeverGoesBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{InstanceID: "same-id"})
		n := sellThenLose(ctx, t, s, rdb, a, "u1")
		// A lower number is raised (the report is written at all), a higher one stays.
		for _, planted := range []int64{0, n + 6} {
			if err := rdb.HSet(ctx, IssuedKey(a.ID), "0:0:same-id", planted).Err(); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				mustRefresh(ctx, t, s)
			}
			got, err := rdb.HGet(ctx, IssuedKey(a.ID), "0:0:same-id").Int64()
			if err != nil {
				t.Fatal(err)
			}
			if want := max(planted, n); got != want {
				t.Fatalf("with %d reported before (a restart under the same id), the instance's report of %d left %d, want %d", planted, n, got, want)
			}
		}
		if v, _ := s.Activity(a.ID); !v.Recovering {
			t.Fatal("not recovering after the loss")
		}
	})
}

// TestReplayFromALayoutNeverHeldIsReported: a buyer's keyed retry of a sale made before a
// reshard reaches an instance started after it, which holds only the new layout: the number
// (of the old epoch) still counts as answered there and is reported.
func TestReplayFromALayoutNeverHeldIsReported(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, cat, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1, IdempotencyKey: "k1"})
		if err != nil || res.Code != Reserved {
			t.Fatalf("reserve: %+v %v", res, err)
		}
		k, n, _ := ParseReservationID(res.ReservationID)
		if err := x.Reshard(ctx, a.ID, 2); err != nil {
			t.Fatal(err)
		}
		y := newStore(t, rdb, Options{Catalog: cat}) // started after the reshard
		mustRefresh(ctx, t, y)
		got, found, err := y.Replay(ctx, a.ID, "u1", "k1")
		if err != nil || !found || got != res.ReservationID {
			t.Fatalf("the retry on y: %q %v %v, want the replay of %s", got, found, err, res.ReservationID)
		}
		deleteActivityKeys(t, rdb, a.ID)
		for range 2 {
			mustRefresh(ctx, t, y)
		}
		y.reports.Wait()
		marks, err := y.IssuedMarks(ctx, a.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := marks[[2]int{k.Epoch, k.Shard}]; m < n {
			t.Fatalf("y answered %s (epoch %d, shard %d) as a replay and reported %d: %v", res.ReservationID, k.Epoch, k.Shard, m, marks)
		}
	})
}
