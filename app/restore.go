package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// Error codes of a Redis that lost an activity's state (docs/API.md section 4).
const (
	// CodeRecovering: the activity is in the recovering state (reservations 503).
	CodeRecovering = "RECOVERING"
	// CodeRestoreNeeded: the admin create of an activity MySQL knows while Redis lost it: a
	// restore (POST /admin/v1/activities/{id}/restore) is needed, never a new load of stock.
	CodeRestoreNeeded = "RESTORE_NEEDED"
)

var _ inventory.Catalog = (*adminStore)(nil)

// Known lists the activities MySQL knows with their generations: the inventory's catalog
// (a loss of Redis state is detected against it). An archived activity is not in it: its
// Redis keys were deleted on purpose (lifecycle.go).
func (s *adminStore) Known(ctx context.Context) ([]inventory.Activity, error) {
	var rows []sql.Activity
	if err := s.db.WithContext(ctx).Where("archived_at IS NULL").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]inventory.Activity, len(rows))
	for i, r := range rows {
		out[i] = activityOfRow(r)
	}
	return out, nil
}

// One is the activity id as MySQL knows it (inventory.Catalog); false for an archived one.
func (s *adminStore) One(ctx context.Context, id string) (inventory.Activity, bool, error) {
	r, ok, err := s.row(ctx, id)
	if err != nil || !ok || r.ArchivedAt != nil {
		return inventory.Activity{}, false, err
	}
	return activityOfRow(r), true, nil
}

func activityOfRow(r sql.Activity) inventory.Activity {
	a := inventory.Activity{ID: r.ID, CampaignID: r.CampaignID, Stock: r.Stock, PerUserLimit: r.PerUserLimit,
		OpensAt: r.OpensAt.UTC(), Shards: r.Shards, RequireToken: r.RequireToken, Generation: r.Generation}
	if r.ClosesAt != nil {
		a.ClosesAt = r.ClosesAt.UTC()
	}
	if r.EndedAt != nil {
		a.EndedAt = r.EndedAt.UTC()
	}
	return a
}

// sameDefinition reports whether two definitions are the same activity (times to the ms).
func sameDefinition(a, b inventory.Activity) bool {
	return a.ID == b.ID && a.CampaignID == b.CampaignID && a.Stock == b.Stock && a.PerUserLimit == b.PerUserLimit &&
		a.OpensAt.UnixMilli() == b.OpensAt.UnixMilli() && a.ClosesAt.UnixMilli() == b.ClosesAt.UnixMilli() &&
		a.Shards == b.Shards && a.RequireToken == b.RequireToken
}

// createKnown answers the admin create of an activity MySQL already knows (row), without
// ever loading stock: a different definition is 409 CONFLICT; the same one is the current
// state (200) while Redis holds that generation, else 409 RESTORE_NEEDED.
func (a *api) createKnown(c *gin.Context, act, row inventory.Activity, opensGiven bool) {
	if !opensGiven {
		act.OpensAt = row.OpensAt
	}
	if !sameDefinition(act, row) {
		writeError(c, newError(http.StatusConflict, CodeConflict, "a different activity exists under this id"))
		return
	}
	ctx := c.Request.Context()
	gen, ok, err := a.inv.Generation(ctx, act.ID)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	v, cached := a.inv.Activity(act.ID)
	if !ok || (row.Generation != "" && gen != row.Generation) || (cached && v.Recovering) {
		writeError(c, newError(http.StatusConflict, CodeRestoreNeeded,
			"MySQL knows this activity but Redis lost its state: restore it with POST /admin/v1/activities/"+act.ID+"/restore").
			with("activityId", act.ID))
		return
	}
	if !cached {
		if v, _, err = a.inv.Lookup(ctx, act.ID); err != nil {
			writeError(c, a.storeError(err))
			return
		}
	}
	out := v.Activity
	out.ClosesAt = row.ClosesAt // the definition's, not an end's (GET /admin/v1/activities/{id} has both)
	c.JSON(http.StatusOK, activityJSON(out))
}

// restoreTimeout bounds one restore job (order's drain wait is 2 min of it).
const restoreTimeout = 5 * time.Minute

// restoreStatusTTL is how long the state of a finished restore job stays readable.
const restoreStatusTTL = 24 * time.Hour

// Restore job states (docs/API.md).
const (
	restoreRunning = "RUNNING"
	restoreDone    = "DONE"
	restoreFailed  = "FAILED"
)

// restoreJob is the state of one restore job, as GET .../restore answers it.
type restoreJob struct {
	ActivityID string               `json:"activityId"`
	State      string               `json:"state"`
	StartedAt  time.Time            `json:"startedAt"`
	FinishedAt *time.Time           `json:"finishedAt,omitempty"`
	Report     *order.RestoreReport `json:"report,omitempty"`
	Error      *restoreJobError     `json:"error,omitempty"`
}

// restoreJobError is why a job failed: the status and error code a synchronous answer would
// have had, and the message.
type restoreJobError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// restoreClaim is how long a runner's claim of a job holds: longer than a run may last
// (restoreTimeout bounds it), so a live runner never loses it, and a job whose runner died
// can be started again after it.
const restoreClaim = restoreTimeout + time.Minute

// restores runs the restore jobs of this instance, one goroutine per job. The state of an
// activity's job is one record for the fleet in Redis (inventory.RestoreJobKey,
// app_restorejob.lua): a POST on any instance while a job runs anywhere answers that job and
// starts nothing, GET on any instance answers the record, and only the runner that claimed
// the job writes its terminal state (its token fences the record: a run that outlived its
// claim writes nothing over a newer job). Its owner runs Run, which on return cancels the
// jobs in progress and waits for them. Safe for concurrent use.
type restores struct {
	run   func(ctx context.Context, id string) (order.RestoreReport, error)
	rdb   redis.UniversalClient
	log   *slog.Logger
	sc    *redis.Script
	scErr error

	ctx    context.Context // the jobs' parent, cancelled when Run returns
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	jobs map[string]*restoreJob // the last job of each activity run here (guarded by mu)
}

func newRestores(run func(ctx context.Context, id string) (order.RestoreReport, error), rdb redis.UniversalClient, log *slog.Logger) *restores {
	ctx, cancel := context.WithCancel(context.Background())
	sc, err := lua.Load("app_restorejob.lua")
	return &restores{run: run, rdb: rdb, log: log, sc: sc, scErr: err, ctx: ctx, cancel: cancel, jobs: map[string]*restoreJob{}}
}

// Run waits for ctx, then cancels the jobs in progress (each leaves the activity recovering
// and its lock to expire or be released) and waits for them.
func (r *restores) Run(ctx context.Context) error {
	<-ctx.Done()
	r.cancel()
	r.wg.Wait()
	return nil
}

// start starts a restore job of id here, or returns the job running in the fleet; started
// says which. An error means Redis did not answer (nothing started).
func (r *restores) start(ctx context.Context, id string) (job restoreJob, started bool, err error) {
	if r.scErr != nil {
		return restoreJob{}, false, r.scErr
	}
	j := &restoreJob{ActivityID: id, State: restoreRunning, StartedAt: time.Now().UTC()}
	b, err := json.Marshal(j)
	if err != nil {
		return restoreJob{}, false, err
	}
	token := inventory.NewGeneration()
	res, err := r.sc.Run(ctx, r.rdb, []string{inventory.RestoreJobKey(id)}, "start", token, b,
		restoreClaim.Milliseconds(), restoreStatusTTL.Milliseconds()).Slice()
	if err != nil {
		return restoreJob{}, false, fmt.Errorf("app: claim the restore job of %s: %w", id, err)
	}
	if n, _ := res[0].(int64); n != 1 {
		var running restoreJob
		s, _ := res[1].(string)
		if err := json.Unmarshal([]byte(s), &running); err != nil {
			return restoreJob{}, false, fmt.Errorf("app: the running restore job of %s: %w", id, err)
		}
		return running, false, nil
	}
	r.mu.Lock()
	r.jobs[id] = j
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(r.ctx, restoreTimeout)
		defer cancel()
		rep, err := r.run(ctx, id)
		r.finish(id, token, j, rep, err)
	}()
	return *j, true, nil
}

// finish records the outcome of job j of id, claimed with token.
func (r *restores) finish(id, token string, j *restoreJob, rep order.RestoreReport, err error) {
	r.mu.Lock()
	now := time.Now().UTC()
	j.FinishedAt = &now
	if err == nil {
		j.State, j.Report = restoreDone, &rep
	} else {
		e := restoreError(err)
		j.State, j.Error = restoreFailed, &restoreJobError{Status: e.Status, Code: e.Code, Message: e.Message}
		if e.Status == http.StatusServiceUnavailable {
			r.log.Warn("restore failed; the activity stays recovering, retry", "activity", id, "err", err)
		} else {
			r.log.Error("restore refused", "activity", id, "err", err)
		}
	}
	out := *j
	r.mu.Unlock()
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 2*time.Second)
	defer cancel()
	res, err := r.sc.Run(ctx, r.rdb, []string{inventory.RestoreJobKey(id)}, "finish", token, out.State, b,
		restoreStatusTTL.Milliseconds()).Slice()
	switch {
	case err != nil:
		r.log.Warn("recording the restore job's outcome failed; GET answers RUNNING until the claim ends, then FAILED", "activity", id,
			"state", out.State, "err", err)
	case len(res) > 0 && res[0] != int64(1):
		r.log.Warn("the restore job's outcome not recorded: its claim was taken over by a newer job", "activity", id, "state", out.State)
	}
}

// status is the activity's last restore job, as the fleet's record in Redis says. A job
// RUNNING past its claim lost its runner, or its outcome (the instance stopped or restarted,
// or could not write the outcome; a run is bounded well inside the claim): it is FAILED, with
// no finishedAt; whether the restore reopened the activity is the activity's own state.
func (r *restores) status(ctx context.Context, id string) (restoreJob, bool, error) {
	if r.scErr != nil {
		return restoreJob{}, false, r.scErr
	}
	res, err := r.sc.Run(ctx, r.rdb, []string{inventory.RestoreJobKey(id)}, "get").Slice()
	if err != nil {
		return restoreJob{}, false, err
	}
	if len(res) == 0 {
		return restoreJob{}, false, nil
	}
	s, _ := res[0].(string)
	var out restoreJob
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return restoreJob{}, false, fmt.Errorf("app: the restore job of %s: %w", id, err)
	}
	if lapsed, _ := res[1].(int64); lapsed == 1 && out.State == restoreRunning {
		out.State, out.Error = restoreFailed, &restoreJobError{Status: http.StatusServiceUnavailable, Code: admission.CodeUnavailable,
			Message: "the restore's runner stopped before it recorded an outcome (its instance stopped, or could not write to Redis): " +
				"if the activity is still recovering, POST again"}
	}
	return out, true, nil
}

// restoreError maps a restore's error to its answer.
func restoreError(err error) *apiError {
	switch {
	case errors.Is(err, order.ErrUnknownActivity):
		return newError(http.StatusNotFound, CodeNotFound, "no such activity in MySQL")
	case errors.Is(err, inventory.ErrBusy), errors.Is(err, order.ErrRestoreRace):
		return newError(http.StatusConflict, CodeConflict, "another restore of this activity is in progress or won: "+err.Error())
	case errors.Is(err, inventory.ErrInvalid):
		return newError(http.StatusConflict, CodeConflict, err.Error())
	default:
		return unavailable("restore needs Redis, MySQL and a drained pipeline; the activity stays recovering, retry: " + err.Error()).after(5 * time.Second)
	}
}

// postRestore serves POST /admin/v1/activities/{id}/restore: it starts a job that rebuilds
// the activity's Redis state from MySQL (order.Reconciler.Restore) and reopens it, and
// answers 202 at once with the job (RUNNING) and where to read it (Location): a restore waits
// for the instances, the journals and the queue, longer than an answer may take. A job of
// the activity running on any instance is answered, not started again (one record for the
// fleet, see restores).
func (a *api) postRestore(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	ctx := c.Request.Context()
	if r, ok, err := a.admin.row(ctx, id); err != nil {
		writeError(c, unavailable("reading the activity from MySQL failed: "+err.Error()).after(5*time.Second))
		return
	} else if !ok {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity in MySQL"))
		return
	} else if r.ArchivedAt != nil {
		writeError(c, newError(http.StatusConflict, CodeArchived, "the activity was archived: its sale is over and MySQL keeps its record"))
		return
	}
	// A restore fences the activity while it runs (seconds): on one this instance holds
	// healthy it is refused unless forced, so a mistaken or repeated POST does not close a
	// live sale. A job running already is answered as before.
	if v, ok := a.inv.Activity(id); ok && !v.Recovering && c.Query("force") != "true" {
		job, found, err := a.restores.status(ctx, id)
		if err != nil {
			writeError(c, unavailable("reading the restore job's state failed: "+err.Error()).after(time.Second))
			return
		}
		if !found || job.State != restoreRunning {
			writeError(c, newError(http.StatusConflict, CodeConflict, "the activity is not recovering: a restore would close its sale while it runs; "+
				"if Redis lost it just now, retry in a second, else POST "+c.Request.URL.Path+"?force=true to restore anyway"))
			return
		}
	}
	job, started, err := a.restores.start(ctx, id)
	if err != nil {
		writeError(c, unavailable("starting the restore job failed: "+err.Error()).after(5*time.Second))
		return
	}
	if started {
		a.log.Info("restore job started", "activity", id)
	}
	c.Header("Location", "/admin/v1/activities/"+id+"/restore")
	c.JSON(http.StatusAccepted, job)
}

// getRestore serves GET /admin/v1/activities/{id}/restore: the state of the activity's last
// restore job (RUNNING, DONE with the report, FAILED with the error); 404 when none is known.
func (a *api) getRestore(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	job, ok, err := a.restores.status(c.Request.Context(), id)
	switch {
	case err != nil:
		writeError(c, unavailable("reading the restore job's state failed: "+err.Error()).after(time.Second))
	case !ok:
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no restore of this activity is known (kept a day)"))
	default:
		c.JSON(http.StatusOK, job)
	}
}

// recoveringIDs are the activities this instance holds in the recovering state.
func (a *api) recoveringIDs() []string {
	if a.inv == nil {
		return nil
	}
	ids, _ := a.inv.Recovering()
	return ids
}
