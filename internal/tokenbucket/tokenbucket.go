// Package tokenbucket owns the token-bucket limit every layer speaks of: the configuration's
// limits, the limiter's budgets and buckets, and the per-user and per-IP buckets the
// reservation script takes; and Bucket, the one in-process token bucket (the limiter's
// fallback, app's per-instance budgets). It imports nothing of the service.
package tokenbucket

// Limit is a token bucket: Rate tokens per second refill a bucket holding at most Burst. A
// Rate of 0 (or less) switches the dimension off (Burst is then ignored). The configuration
// requires a Burst of at least 1 with a positive Rate; elsewhere a lower Burst acts as 1.
type Limit struct {
	Rate  float64 `yaml:"rate" json:"rate"`
	Burst int     `yaml:"burst" json:"burst"`
}

// Limited reports whether l limits anything (Rate > 0).
func (l Limit) Limited() bool { return l.Rate > 0 }

// Capacity is the bucket's capacity as the scripts and local buckets use it: Burst, at
// least 1.
func (l Limit) Capacity() int { return max(1, l.Burst) }

// Share is l split evenly over n instances: Rate/n and Burst/n, Burst at least 1; l itself
// when n <= 1.
func (l Limit) Share(n int) Limit {
	if n <= 1 {
		return l
	}
	return Limit{Rate: l.Rate / float64(n), Burst: max(1, l.Burst/n)}
}
