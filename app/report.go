package app

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// hllStandardError is the standard error of a Redis HyperLogLog count (16384 registers:
// 1.04/sqrt(16384)), the error of the report's distinct-user estimates.
const hllStandardError = 0.0081

// saleReport is the body of GET /admin/v1/activities/{id}/report (docs/API.md).
type saleReport struct {
	ActivityID string  `json:"activityId"`
	CampaignID string  `json:"campaignId"`
	Stock      int64   `json:"stock"`
	Remaining  int64   `json:"remaining"`
	SoldOut    bool    `json:"soldOut"`
	OpensAt    string  `json:"opensAt"`
	ClosesAt   *string `json:"closesAt"`
	// FirstAccepted and LastAccepted are the times of the first and last accepted
	// reservation (null before the first); TimeToSellOutMs is LastAccepted - OpensAt once
	// sold out, else null.
	FirstAccepted   *string `json:"firstAccepted"`
	LastAccepted    *string `json:"lastAccepted"`
	TimeToSellOutMs *int64  `json:"timeToSellOutMs"`

	Attempts      int64            `json:"attempts"`
	Answers       map[string]int64 `json:"answers"`
	Refused       map[string]int64 `json:"refused"`
	RefusedTotal  int64            `json:"refusedTotal"`
	UnitsReserved int64            `json:"unitsReserved"`

	DistinctUsers reportUsers   `json:"distinctUsers"`
	Orders        reportOrders  `json:"orders"`
	Latency       reportLatency `json:"latency"`
	PeakSecond    *reportPeak   `json:"peakSecond"`
	Conversion    reportConv    `json:"conversion"`
	// BlockRate is (blacklist + remembered + rate_ip) / attempts, null before an attempt.
	BlockRate *float64 `json:"blockRate"`

	Compensated int64 `json:"compensated"`
	Drift       int64 `json:"drift"`
	// CountsLagMs bounds how far the counted answers lag the answers given: each instance
	// adds its counts to Redis every 250 ms.
	CountsLagMs int64 `json:"countsLagMs"`
}

type reportUsers struct {
	Tried         int64   `json:"tried"`
	Bought        int64   `json:"bought"`
	StandardError float64 `json:"standardError"`
}

type reportOrders struct {
	Count          int64 `json:"count"`
	Units          int64 `json:"units"`
	DistinctBuyers int64 `json:"distinctBuyers"`
}

type reportLatency struct {
	Accepted reportQuantiles `json:"accepted"`
	Refused  reportQuantiles `json:"refused"`
}

// reportQuantiles are bucketed quantiles: the upper bound of the bucket the quantile falls
// in, in milliseconds (null when there is no answer or it falls past the last bound, 5 s).
type reportQuantiles struct {
	Count int64    `json:"count"`
	P50Ms *float64 `json:"p50Ms"`
	P99Ms *float64 `json:"p99Ms"`
}

type reportPeak struct {
	At       string `json:"at"`
	Attempts int64  `json:"attempts"`
	Accepted int64  `json:"accepted"`
}

type reportConv struct {
	OrdersPerAttempt   *float64 `json:"ordersPerAttempt"`
	OrdersPerTriedUser *float64 `json:"ordersPerTriedUser"`
}

// getReport serves GET /admin/v1/activities/{id}/report: what the instances counted (the
// funnel hash, its first/last set and the distinct-user estimates: one Redis round trip),
// MySQL's orders of the activity (one aggregate on the activity index) and the
// reconciliation counts.
func (a *api) getReport(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	v, e := a.lookup(c, a.cfg.Current(), id)
	if e != nil {
		if e.Status != http.StatusNotFound || !a.archivedRecord(c, id, "report") {
			writeError(c, e)
		}
		return
	}
	ctx := c.Request.Context()
	rep, err := a.saleReport(ctx, v)
	if errors.Is(err, order.ErrUnknownActivity) {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity"))
		return
	}
	if err != nil {
		a.log.Warn("sale report", "activity", id, "err", err)
		writeError(c, unavailable("the report needs Redis and MySQL"))
		return
	}
	c.JSON(http.StatusOK, rep)
}

func (a *api) saleReport(ctx context.Context, v inventory.ActivityView) (*saleReport, error) {
	id := v.ID
	pipe := a.rdb.Pipeline()
	fields := pipe.HGetAll(ctx, inventory.Funnel(id))
	times := pipe.ZRangeWithScores(ctx, inventory.FunnelTimes(id), 0, -1)
	tried, bought := redis.NewIntCmd(ctx), redis.NewIntCmd(ctx)
	if t, b, ok := a.funnel.localDistinct(id); ok {
		tried.SetVal(int64(t))
		bought.SetVal(int64(b))
	} else {
		tried = pipe.PFCount(ctx, inventory.FunnelUsers(id, "tried"))
		bought = pipe.PFCount(ctx, inventory.FunnelUsers(id, "bought"))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var orders reportOrders
	if err := a.admin.db.WithContext(ctx).Model(&sql.Order{}).Where("activity_id = ?", id).
		Select("COUNT(*) AS count, COALESCE(SUM(quantity), 0) AS units, COUNT(DISTINCT user_id) AS distinct_buyers").
		Scan(&orders).Error; err != nil {
		return nil, err
	}
	rec, err := a.rec.Report(ctx, id)
	if err != nil {
		return nil, err
	}
	r := &saleReport{
		ActivityID: id, CampaignID: v.CampaignID, Stock: rec.Stock, Remaining: max(rec.RedisRemaining, 0),
		SoldOut: v.SoldOut || rec.RedisRemaining <= 0, OpensAt: millis(v.OpensAt),
		Answers: map[string]int64{}, Refused: map[string]int64{},
		DistinctUsers: reportUsers{Tried: tried.Val(), Bought: bought.Val(), StandardError: hllStandardError},
		Orders:        orders, Compensated: rec.Compensated, Drift: rec.Drift,
		CountsLagMs: funnelFlushEvery.Milliseconds(),
	}
	if !v.ClosesAt.IsZero() {
		s := millis(v.ClosesAt)
		r.ClosesAt = &s
	}
	r.readFunnel(fields.Val())
	r.readTimes(times.Val(), v.OpensAt)
	if r.Attempts > 0 {
		r.Conversion.OrdersPerAttempt = ratio(orders.Count, r.Attempts)
		r.BlockRate = ratio(r.Answers["blacklist"]+r.Answers["remembered"]+r.Answers["rate_ip"], r.Attempts)
	}
	if r.DistinctUsers.Tried > 0 {
		r.Conversion.OrdersPerTriedUser = ratio(orders.Count, r.DistinctUsers.Tried)
	}
	return r, nil
}

// readFunnel fills the report's counts, answers, refusals, busiest second and latency
// quantiles from the funnel hash's fields; a field whose value is not an integer is skipped.
func (r *saleReport) readFunnel(fields map[string]string) {
	var lat [2][nFunnelBuckets]int64
	seconds := map[int64]*reportPeak{}
	for k, s := range fields {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			continue
		}
		switch {
		case k == "attempts":
			r.Attempts = n
		case k == "units":
			r.UnitsReserved = n
		case strings.HasPrefix(k, "o:"):
			r.Answers[k[2:]] = n
		case strings.HasPrefix(k, "lat:a:"), strings.HasPrefix(k, "lat:r:"):
			i := 0
			if k[4] == 'r' {
				i = 1
			}
			if b, err := strconv.Atoi(k[6:]); err == nil && b >= 0 && b < nFunnelBuckets {
				lat[i][b] = n
			}
		case strings.HasPrefix(k, "s:a:"), strings.HasPrefix(k, "s:r:"):
			sec, err := strconv.ParseInt(k[4:], 10, 64)
			if err != nil {
				continue
			}
			p := seconds[sec]
			if p == nil {
				p = &reportPeak{At: millis(time.Unix(sec, 0))}
				seconds[sec] = p
			}
			if k[2] == 'a' {
				p.Attempts = n
			} else {
				p.Accepted = n
			}
		}
	}
	for o := oAccepted; o < nOutcomes; o++ {
		n := r.Answers[o.funnelName()]
		r.Answers[o.funnelName()] = n
		if o.refused() {
			r.Refused[o.funnelName()] = n
			r.RefusedTotal += n
		}
	}
	var peakSec int64
	for sec, p := range seconds {
		if r.PeakSecond == nil || p.Attempts > r.PeakSecond.Attempts || (p.Attempts == r.PeakSecond.Attempts && sec < peakSec) {
			r.PeakSecond, peakSec = p, sec
		}
	}
	r.Latency.Accepted = quantiles(lat[0][:])
	r.Latency.Refused = quantiles(lat[1][:])
}

// readTimes sets the report's first and last accepted times from the funnel's times set,
// and the time to sell out (from opensAt to the last acceptance) when the sale sold out.
func (r *saleReport) readTimes(times []redis.Z, opensAt time.Time) {
	for _, z := range times {
		t := millis(time.UnixMilli(int64(z.Score)))
		switch z.Member {
		case "first":
			r.FirstAccepted = &t
		case "last":
			r.LastAccepted = &t
			if r.SoldOut {
				d := int64(z.Score) - opensAt.UnixMilli()
				r.TimeToSellOutMs = &d
			}
		}
	}
}

func ratio(n, d int64) *float64 {
	x := float64(n) / float64(d)
	return &x
}

// quantiles are the bucketed p50 and p99 of a latency histogram (counts by funnelBuckets,
// the last +Inf).
func quantiles(counts []int64) reportQuantiles {
	var q reportQuantiles
	for _, n := range counts {
		q.Count += n
	}
	if q.Count == 0 {
		return q
	}
	at := func(p float64) *float64 {
		rank := int64(math.Ceil(p * float64(q.Count)))
		var cum int64
		for i, n := range counts {
			cum += n
			if cum >= rank {
				if i >= len(funnelBuckets) {
					return nil
				}
				ms := funnelBuckets[i] * 1000
				return &ms
			}
		}
		return nil
	}
	q.P50Ms, q.P99Ms = at(0.50), at(0.99)
	return q
}
