//go:build integration

package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
)

// fakeRun is a restore run that waits for release and returns its outcome, counting calls.
type fakeRun struct {
	calls   atomic.Int64
	release chan struct{}
	rep     order.RestoreReport
	err     error
}

func (f *fakeRun) run(ctx context.Context, id string) (order.RestoreReport, error) {
	f.calls.Add(1)
	select {
	case <-f.release:
	case <-ctx.Done():
		return order.RestoreReport{}, ctx.Err()
	}
	return f.rep, f.err
}

// TestRestoreJobIsOneRecordForTheFleet: two admin instances (two restores objects on one
// Redis). A POST on B while A runs the restore must answer A's job and run nothing (it used to
// start its own run, which failed on the restore lock and saved FAILED over A's RUNNING), GET
// on either answers the same record throughout, A's outcome is what both answer at the end,
// and a runner whose claim was taken over (a run that outlived its bound) writes nothing over
// the new runner's record.
func TestRestoreJobIsOneRecordForTheFleet(t *testing.T) {
	rdb := testsvc.Redis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	id := uniq(t, "rjob")
	t.Cleanup(func() { rdb.Del(context.Background(), inventory.RestoreJobKey(id)) })
	runA := &fakeRun{release: make(chan struct{}), rep: order.RestoreReport{ActivityID: id, Orders: 7}}
	runB := &fakeRun{release: make(chan struct{}), err: inventory.ErrBusy}
	a, b := newRestores(runA.run, rdb, log), newRestores(runB.run, rdb, log)
	for _, r := range []*restores{a, b} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	ctx := context.Background()
	jobA, started, err := a.start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !started || jobA.State != restoreRunning {
		t.Fatalf("POST on A: %+v started=%v, want a RUNNING job started", jobA, started)
	}
	jobB, started, err := b.start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if started || jobB.State != restoreRunning || !jobB.StartedAt.Equal(jobA.StartedAt) {
		t.Fatalf("POST on B while A runs: %+v started=%v, want A's RUNNING job (started %v), nothing started", jobB, started, jobA.StartedAt)
	}
	same := func(want string) {
		t.Helper()
		for name, r := range map[string]*restores{"A": a, "B": b} {
			j, ok, err := r.status(ctx, id)
			if err != nil || !ok || j.State != want || !j.StartedAt.Equal(jobA.StartedAt) {
				t.Fatalf("GET on %s: %+v ok=%v %v, want %s of the job started %v", name, j, ok, err, want, jobA.StartedAt)
			}
		}
	}
	same(restoreRunning)
	close(runA.release)
	testwait.Eventually(t, 30*time.Second, func() bool {
		j, _, _ := b.status(ctx, id)
		return j.State != restoreRunning
	}, "A's job finished, seen from B")
	same(restoreDone)
	if j, _, _ := b.status(ctx, id); j.Report == nil || j.Report.Orders != 7 {
		t.Fatalf("GET on B: %+v, want A's report", j)
	}
	if n := runB.calls.Load(); n != 0 {
		t.Fatalf("B ran %d restores while A's was running", n)
	}

	// The fence: A runs again, its claim is taken over by B (A's run outlived its bound), then
	// A finishes: A's outcome must not replace B's record.
	runA2 := &fakeRun{release: make(chan struct{}), rep: order.RestoreReport{ActivityID: id, Orders: 1}}
	a.run = runA2.run
	jobA2, started, err := a.start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !started {
		t.Fatalf("a new POST on A after DONE: %+v, want a new job", jobA2)
	}
	testwait.Eventually(t, 30*time.Second, func() bool { return runA2.calls.Load() == 1 }, "A's second run started")
	if err := expireRestoreClaim(ctx, rdb, id); err != nil {
		t.Fatal(err)
	}
	jobB2, started, err := b.start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !started {
		t.Fatalf("POST on B after A's claim expired: %+v, want B to take the job over", jobB2)
	}
	close(runA2.release)
	testwait.Eventually(t, 30*time.Second, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		j := a.jobs[id]
		return j != nil && j.State != restoreRunning
	}, "A's second run ended")
	j, _, err := a.status(ctx, id)
	if err != nil || j.State != restoreRunning || !j.StartedAt.Equal(jobB2.StartedAt) {
		t.Fatalf("GET on A after its fenced run ended: %+v %v, want B's RUNNING job (started %v)", j, err, jobB2.StartedAt)
	}
	close(runB.release)
	testwait.Eventually(t, 30*time.Second, func() bool {
		j, _, _ := a.status(ctx, id)
		return j.State == restoreFailed
	}, "B's outcome recorded")
	if j, _, _ := a.status(ctx, id); j.Error == nil || !errors.Is(runB.err, inventory.ErrBusy) || j.Error.Status != 409 {
		t.Fatalf("B's job: %+v, want FAILED 409", j)
	}
}

// expireRestoreClaim ends the claim of the activity's running restore job, as if its run had
// outlived its bound.
func expireRestoreClaim(ctx context.Context, rdb redis.UniversalClient, id string) error {
	return rdb.HSet(ctx, inventory.RestoreJobKey(id), "until", 0).Err()
}

// TestARestoreWhoseRunnerStoppedIsNotRunning: the instance running a restore stops (killed,
// restarted) before it records an outcome. Once its claim has lapsed, every instance answers
// the job FAILED (503 UNAVAILABLE: POST again), not RUNNING for the day the record is kept, and
// a POST without force on an activity held healthy is refused again (it had passed the guard
// on the stale RUNNING and closed the sale).
func TestARestoreWhoseRunnerStoppedIsNotRunning(t *testing.T) {
	rdb := testsvc.Redis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	id := uniq(t, "rjob-stopped")
	t.Cleanup(func() { rdb.Del(context.Background(), inventory.RestoreJobKey(id)) })
	dead := &fakeRun{release: make(chan struct{})} // never released: the runner never records
	a, b := newRestores(dead.run, rdb, log), newRestores(dead.run, rdb, log)
	t.Cleanup(func() {
		for _, r := range []*restores{a, b} {
			r.cancel()
			r.wg.Wait()
		}
	})
	ctx := context.Background()
	if _, started, err := a.start(ctx, id); err != nil || !started {
		t.Fatalf("start: %v %v", started, err)
	}
	if j, ok, err := b.status(ctx, id); err != nil || !ok || j.State != restoreRunning {
		t.Fatalf("GET while the claim holds: %+v %v %v, want RUNNING", j, ok, err)
	}
	if err := expireRestoreClaim(ctx, rdb, id); err != nil {
		t.Fatal(err)
	}
	j, ok, err := b.status(ctx, id)
	if err != nil || !ok || j.State != restoreFailed || j.Error == nil || j.Error.Status != 503 || j.FinishedAt != nil {
		t.Fatalf("GET once the runner's claim lapsed: %+v %v %v, want FAILED 503 with no finishedAt", j, ok, err)
	}
	t.Logf("answered: %+v", *j.Error)
	// a new POST takes the job over as before
	if j, started, err := b.start(ctx, id); err != nil || !started || j.State != restoreRunning {
		t.Fatalf("a POST after the runner stopped: %+v %v %v, want a new job", j, started, err)
	}
}
