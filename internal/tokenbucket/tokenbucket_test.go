package tokenbucket

import (
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	if (Limit{}).Limited() || (Limit{Rate: -1, Burst: 5}).Limited() || !(Limit{Rate: 0.5}).Limited() {
		t.Error("Limited: only a positive rate limits")
	}
	if got := (Limit{Rate: 1}).Capacity(); got != 1 {
		t.Errorf("Capacity of burst 0 = %d, want 1", got)
	}
	if got := (Limit{Rate: 10, Burst: 7}).Share(4); got != (Limit{Rate: 2.5, Burst: 1}) {
		t.Errorf("Share(4) = %+v", got)
	}
	if got := (Limit{Rate: 10, Burst: 7}).Share(1); got != (Limit{Rate: 10, Burst: 7}) {
		t.Errorf("Share(1) = %+v", got)
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	b := NewBucket(Limit{Rate: 3, Burst: 2}, t0)
	for i := range 2 {
		if ok, _ := b.Take(t0); !ok {
			t.Fatalf("take %d of a full bucket of 2 refused", i+1)
		}
	}
	// One token at 3/s is 333.33... ms away: rounded up to a whole millisecond.
	if ok, wait := b.Take(t0); ok || wait != 334*time.Millisecond {
		t.Fatalf("empty bucket: ok=%v wait=%v, want refused, 334ms", ok, wait)
	}
	if ok, _ := b.Take(t0.Add(333 * time.Millisecond)); ok {
		t.Fatal("admitted before the token was there")
	}
	if ok, _ := b.Take(t0.Add(334 * time.Millisecond)); !ok {
		t.Fatal("refused at its retry-after")
	}
	b.Give(t0.Add(334 * time.Millisecond))
	if got := b.Tokens(t0.Add(334 * time.Millisecond)); got < 0.99 || got > 1.01 {
		t.Fatalf("after a give: %v tokens, want 1", got)
	}

	// A change keeps the tokens, clamped to the new burst; it never refills.
	full := NewBucket(Limit{Rate: 20, Burst: 10}, t0)
	full.Configure(Limit{Rate: 20, Burst: 3}, t0)
	if got := full.Tokens(t0); got != 3 {
		t.Fatalf("shrunk to burst 3: %v tokens", got)
	}
	full.Configure(Limit{Rate: 20, Burst: 100}, t0)
	if got := full.Tokens(t0); got != 3 {
		t.Fatalf("grown to burst 100: %v tokens, want the 3 kept", got)
	}

	if b.IdleSince(t0.Add(334*time.Millisecond)) || !b.IdleSince(t0.Add(335*time.Millisecond)) {
		t.Fatal("IdleSince does not follow the last take")
	}
	off := NewBucket(Limit{Rate: 0, Burst: 1}, t0)
	off.Take(t0)
	if ok, wait := off.Take(t0); ok || wait != time.Second {
		t.Fatalf("rate 0, empty: ok=%v wait=%v, want refused, 1s", ok, wait)
	}
}
