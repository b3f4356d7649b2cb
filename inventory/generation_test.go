package inventory

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// fakeCatalog is the system of record's list of activities, held in memory for these tests
// of the inventory alone (the app's catalog reads MySQL: app tests).
type fakeCatalog struct {
	mu   sync.Mutex
	acts map[string]Activity
}

func (c *fakeCatalog) Known(context.Context) ([]Activity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Activity, 0, len(c.acts))
	for _, a := range c.acts {
		out = append(out, a)
	}
	return out, nil
}

func (c *fakeCatalog) put(a Activity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acts == nil {
		c.acts = map[string]Activity{}
	}
	c.acts[a.ID] = a
}

// deleteActivityKeys removes every key of one activity (what a Redis that restarted empty
// shows for it), leaving the other tests' keys alone.
func deleteActivityKeys(t *testing.T, rdb redis.UniversalClient, id string) {
	t.Helper()
	ctx := ctxT(t)
	var keys []string
	for _, pat := range []string{"sk:{" + id + "}:*", "sk:{" + id + ":*"} {
		it := rdb.Scan(ctx, 0, pat, 1000).Iterator()
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				it := m.Scan(ctx, 0, pat, 1000).Iterator()
				for it.Next(ctx) {
					keys = append(keys, it.Val())
				}
				return it.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if err := rdb.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLostRedisStatePutsTheActivityInRecovering: an activity MySQL knows whose meta is gone,
// whose generation differs, or whose current shard lost its stock key is refused with
// ErrRecovering after one refresh, on an instance that had it cached and on one that never
// saw it; nothing is re-created, and only a generation change in the catalog (a restore)
// with meta carrying it clears the state.
func TestLostRedisStatePutsTheActivityInRecovering(t *testing.T) {
	for _, loss := range []string{"meta", "generation", "shard"} {
		t.Run(loss, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := ctxT(t)
				cat := &fakeCatalog{}
				s := newStore(t, rdb, Options{Catalog: cat})
				a := mustCreate(t, s, openActivity(t, 10, 1, 2))
				if a.Generation == "" {
					t.Fatal("Create returned no generation")
				}
				cat.put(a)
				if err := s.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1}); err != nil {
					t.Fatal(err)
				}
				switch loss {
				case "meta":
					deleteActivityKeys(t, rdb, a.ID)
				case "generation":
					if err := rdb.HSet(ctx, Meta(a.ID), "gen", "other").Err(); err != nil {
						t.Fatal(err)
					}
				case "shard":
					if err := rdb.Del(ctx, Shard(a.ID, 0, 1).Stock()).Err(); err != nil {
						t.Fatal(err)
					}
				}
				fresh := newStore(t, rdb, Options{Catalog: cat}) // an instance started after the loss
				for _, st := range []*Store{s, fresh} {
					if err := st.Refresh(ctx); err != nil {
						t.Fatal(err)
					}
					v, ok := st.Activity(a.ID)
					if !ok || !v.Recovering {
						t.Fatalf("after the loss of the %s: view %+v (cached %v), want recovering", loss, v, ok)
					}
					_, err := st.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1})
					if !errors.Is(err, ErrRecovering) {
						t.Fatalf("reserve while recovering: %v, want ErrRecovering", err)
					}
					if ids, _ := st.Recovering(); len(ids) != 1 || ids[0] != a.ID {
						t.Fatalf("Recovering() = %v", ids)
					}
				}
				if loss == "meta" {
					if n, err := rdb.Exists(ctx, Meta(a.ID), Shard(a.ID, 0, 0).Stock()).Result(); err != nil || n != 0 {
						t.Fatalf("the refresh re-created keys: %d (%v)", n, err)
					}
				}
				// The same generation coming back (a rolled-back copy) does not reopen it.
				if loss == "generation" {
					if err := rdb.HSet(ctx, Meta(a.ID), "gen", a.Generation).Err(); err != nil {
						t.Fatal(err)
					}
					if err := s.Refresh(ctx); err != nil {
						t.Fatal(err)
					}
					if v, _ := s.Activity(a.ID); !v.Recovering {
						t.Fatal("the old generation back in meta reopened the activity")
					}
				}
			})
		})
	}
}
