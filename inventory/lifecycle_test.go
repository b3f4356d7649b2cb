package inventory

import "testing"

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
		{"sk:{budget:global}", "budget", false},
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
