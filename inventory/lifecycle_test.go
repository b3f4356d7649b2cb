package inventory

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Purge deletes an activity's keys and no one else's: the shards' tags {A:<epoch>:<shard>}
// and the activity's {A}, never a tag that only starts like them (the per-IP buckets
// sk:{ip:<hash>}:tb of an activity named "ip", the leased budgets sk:{budget:<name>}, another
// activity whose id starts with A).
func TestOwnedByKeepsOtherOwnersKeys(t *testing.T) {
	for _, c := range []struct {
		key, id string
		want    bool
	}{
		{"sk:{a}:meta", "a", true},
		{"sk:{a}:q:live", "a", true},
		{"sk:{a:0:3}:stock", "a", true},
		{"sk:{a:12:0}:r:7", "a", true},
		{"sk:{ab}:meta", "a", false},
		{"sk:{ab:0:1}:stock", "a", false},
		{"sk:{ip:9f86d081884c7d65}:tb", "ip", false},
		{"sk:{ip:9f86d081884c7d65}:tb:ns1", "ip", false},
		{"sk:{ip:9f86d081884c7d65}:tk", "ip", false},
		{"sk:{ip:9f86d081884c7d65}:tk:ns1", "ip", false},
		{"sk:{budget:global}", "budget", false},
		{"sk:{budget:global}:tk", "budget", false},
		{"sk:{budget:activity:a}:tk:ns1", "budget", false},
		{"sk:{budget:global:1}", "budget", false},
		{"sk:{a:0}:stock", "a", false},
		{"sk:{a:0:1:2}:stock", "a", false},
		{"sk:lock:{a:9f86}", "a", false},
		{"sk:activities", "a", false},
	} {
		if got := ownedBy(c.key, c.id); got != c.want {
			t.Errorf("ownedBy(%q, %q) = %v, want %v", c.key, c.id, got, c.want)
		}
	}
}

// End closes the sale on this instance at once and in meta for the others; Purge deletes every
// key of the activity, on every master of a Cluster too, and leaves only the archive's mark.
func TestEndThenPurgeLeavesOnlyTheMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 1, 4))
		for i := 0; i < 4; i++ {
			if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprintf("u%d", i), Quantity: 1}); err != nil {
				t.Fatal(err)
			}
		}
		at := time.Now().Add(-time.Second).Truncate(time.Millisecond)
		ended, err := s.End(ctx, a.ID, at)
		if err != nil || !ended.At.Equal(at) {
			t.Fatalf("End: %+v %v, want the end at %v", ended, err, at)
		}
		if v, ok := s.Activity(a.ID); !ok || !v.ClosesAt.Equal(at) {
			t.Fatalf("the view after End: closes %v, want %v", v.ClosesAt, at)
		}
		if res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "late", Quantity: 1}); err == nil && res.Code == Reserved {
			t.Fatalf("a reservation after the end was taken: %+v", res)
		}
		if again, err := s.End(ctx, a.ID, time.Now()); err != nil || !again.At.Equal(at) {
			t.Fatalf("a later End: %+v %v, want the first end %v to stand", again, err, at)
		}
		n, err := s.Purge(ctx, a.ID)
		if err != nil || n == 0 {
			t.Fatalf("Purge: %d keys, %v", n, err)
		}
		if keys := keysOfActivity(t, rdb, a.ID); len(keys) != 1 || keys[0] != ArchivedKey(a.ID) {
			t.Fatalf("keys after Purge: %v, want only %s", keys, ArchivedKey(a.ID))
		}
	})
}
