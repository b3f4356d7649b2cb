package inventory

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
)

// TestOneBrokenMetaDoesNotStopTheRefresh: a meta key of the wrong type (an operator's SET, a
// restore from a bad dump) is that activity's problem alone. The other activities' refresh
// goes on: another instance's sales lower this one's remaining and mark the sale sold out,
// so the instance stops sending its requests to the stock scripts.
func TestOneBrokenMetaDoesNotStopTheRefresh(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 2, 1, 1), Options{})
		broken := uniqueID(t) + "-broken"
		set := keyspace.Namespaced(x.opts.Namespace, keyspace.Activities)
		if err := rdb.SAdd(ctx, set, broken).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, Meta(broken), "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			rdb.Del(context.Background(), Meta(broken))
			rdb.SRem(context.Background(), set, broken)
		})
		mustReserve(ctx, t, y, "y", a.ID, "u1")
		mustReserve(ctx, t, y, "y", a.ID, "u2")
		if keys, err := x.refresh(ctx); keys == nil || err != nil {
			t.Fatalf("a refresh beside a meta of the wrong type: unreadable keys %v, failure %v; want the key named and no failure", keys, err)
		}
		v, ok := x.Activity(a.ID)
		if !ok {
			t.Fatal("the activity was dropped")
		}
		if v.Remaining != 0 || !v.SoldOut {
			t.Fatalf("after another instance sold the stock, a refresh beside a broken meta reads remaining %d, sold out %v; want 0, true", v.Remaining, v.SoldOut)
		}
	})
}
