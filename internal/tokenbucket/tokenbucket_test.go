package tokenbucket

import "testing"

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
