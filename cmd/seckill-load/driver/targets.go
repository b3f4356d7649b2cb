package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// CreateActivity posts the scenario's activity to the admin listener (AdminURL, else the
// first target) and waits until every target knows it.
func (r *Driver) CreateActivity(ctx context.Context) error {
	cfg := r.cfg
	now := time.Now().UTC()
	def := map[string]any{
		"activityId":   cfg.Activity,
		"stock":        cfg.Stock,
		"perUserLimit": cfg.PerUserLimit,
		"shards":       cfg.Shards,
	}
	if cfg.OpensInSet || cfg.OpensIn != 0 {
		// Without it the server opens a new activity now and keeps an existing one's opening.
		def["opensAt"] = now.Add(cfg.OpensIn).Format("2006-01-02T15:04:05.000Z07:00")
	}
	if cfg.ClosesIn > 0 {
		def["closesAt"] = now.Add(cfg.ClosesIn).Format("2006-01-02T15:04:05.000Z07:00")
	}
	body, _ := json.Marshal(def)
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	admin := cfg.AdminURL
	if admin == "" {
		admin = cfg.Targets[0]
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, admin+"/admin/v1/activities", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("create activity: %w", err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("create activity: %s: %s", resp.Status, bytes.TrimSpace(b))
	}

	// The spec makes a new activity visible on every instance within 1 s.
	deadline := time.Now().Add(5 * time.Second)
	for _, t := range cfg.Targets {
		for {
			st, _, err := getActivity(ctx, r.client, t, cfg.Activity)
			if err == nil && st != "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("activity %s created but not visible on %s: %v", cfg.Activity, t, err)
			}
			if backoff.Sleep(ctx, 50*time.Millisecond) != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// CheckStock refuses a run against an activity that has nothing left to sell (sold out or
// closed, by an earlier run say): its rush would be answered 410 throughout and measure
// nothing, and every check would pass. The first target is asked; a target that does not
// answer, or answers nonsense, is left to the rush and its checks.
func (r *Driver) CheckStock(ctx context.Context) error {
	st, rem, err := getActivity(ctx, r.client, r.cfg.Targets[0], r.cfg.Activity)
	if err != nil || rem != nil && *rem < 0 {
		return nil // the rush and its checks report what is wrong with the target
	}
	if st == "SOLD_OUT" || st == "CLOSED" || rem != nil && *rem == 0 {
		return fmt.Errorf("activity %s is %s with nothing left to sell (an earlier run sold it?): a rush would measure nothing; "+
			"run with a new --activity and --create", r.cfg.Activity, st)
	}
	return nil
}

// CheckReady asks every target for /readyz once, so a run against a dead port or an instance
// without configuration stops at once with a clear reason instead of reporting a rush of
// transport errors.
func (r *Driver) CheckReady(ctx context.Context) error {
	for _, t := range r.cfg.Targets {
		cctx, cancel := context.WithTimeout(ctx, min(r.cfg.Timeout, 5*time.Second))
		req, err := http.NewRequestWithContext(cctx, http.MethodGet, t+"/readyz", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			cancel()
			return fmt.Errorf("target %s is not answering (GET /readyz: %v); is the service running there?", t, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("target %s is not ready: GET /readyz answered %s %s", t, resp.Status, bytes.TrimSpace(b))
		}
	}
	return nil
}

// getActivity reads GET /api/v1/activities/{id}: its status and remaining (nil when absent).
func getActivity(ctx context.Context, c *http.Client, target, activity string) (string, *int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/api/v1/activities/"+activity, nil)
	if err != nil {
		return "", nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("GET activity: %s", resp.Status)
	}
	var a struct {
		Status    string `json:"status"`
		Remaining *int64 `json:"remaining"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return "", nil, fmt.Errorf("GET activity: %w", err)
	}
	return a.Status, a.Remaining, nil
}

// SaleReport reads the service's sale report of the activity (GET
// /admin/v1/activities/{id}/report on the admin listener, with AdminToken): what every
// instance counted, by layer, and MySQL's orders.
func (r *Driver) SaleReport(ctx context.Context) (map[string]any, error) {
	var rep map[string]any
	if err := r.adminGet(ctx, "report", &rep); err != nil {
		return nil, fmt.Errorf("sale report: %w", err)
	}
	return rep, nil
}

// Reconciliation is the service's reconciliation of one activity (docs/API.md), in units:
// drift = stock - redisRemaining - ordersInDb - journalPending - inFlight.
type Reconciliation struct {
	Stock          int64 `json:"stock"`
	RedisRemaining int64 `json:"redisRemaining"`
	JournalPending int64 `json:"journalPending"`
	InFlight       int64 `json:"inFlight"`
	OrdersInDB     int64 `json:"ordersInDb"`
	Compensated    int64 `json:"compensated"`
	Drift          int64 `json:"drift"`
	Lost           struct {
		Count int64 `json:"count"`
	} `json:"lost"`
}

// Reconciliation reads GET /admin/v1/activities/{id}/reconciliation on the admin listener,
// with AdminToken: the orders in the service's database and the units on their way there,
// for a run that cannot read the database itself (the embedded mode's SQLite).
func (r *Driver) Reconciliation(ctx context.Context) (Reconciliation, error) {
	var rc Reconciliation
	if err := r.adminGet(ctx, "reconciliation", &rc); err != nil {
		return Reconciliation{}, fmt.Errorf("reconciliation: %w", err)
	}
	return rc, nil
}

// adminGet decodes the JSON answer of GET /admin/v1/activities/{id}/<what> into v.
func (r *Driver) adminGet(ctx context.Context, what string, v any) error {
	cfg := r.cfg
	admin := cfg.AdminURL
	if admin == "" {
		admin = cfg.Targets[0]
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, admin+"/admin/v1/activities/"+cfg.Activity+"/"+what, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, v)
}
