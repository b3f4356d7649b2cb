//go:build integration

package inventory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestFenceRefusedMatchesMySQLsGeneration: a refusal fences the activity's meta and shards
// while meta names the generation MySQL had when it refused; for an activity from before
// generations (MySQL's row has none) while meta names none either; never a meta that names
// another generation (a restore moved it on, and the refusal was of the old state).
func TestFenceRefusedMatchesMySQLsGeneration(t *testing.T) {
	rdb := testsvc.Redis(t)
	l, err := NewLedger(rdb)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, meta, mysql string
		fenced            bool
	}{
		{"same generation", "g1", "g1", true},
		{"no generations", "", "", true},
		{"restored since", "g2", "g1", false},
		{"restored since, the row read without one", "g2", "", false},
		{"a restore's fence", generationFenced, "g1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("fence-%d", time.Now().UnixNano())
			fields := []any{"stock", 10, "layouts", "0:2", "epoch", 0, "shards", 2}
			if tc.meta != "" {
				fields = append(fields, "gen", tc.meta)
			}
			k0, k1 := Shard(id, 0, 0), Shard(id, 0, 1)
			t.Cleanup(func() { rdb.Del(context.Background(), Meta(id), k0.Gen(), k1.Gen()) })
			if err := rdb.HSet(ctx, Meta(id), fields...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := l.FenceRefused(ctx, id, tc.mysql); err != nil {
				t.Fatal(err)
			}
			gen, _ := rdb.HGet(ctx, Meta(id), "gen").Result()
			n, err := rdb.Exists(ctx, k0.Gen(), k1.Gen()).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := gen == generationRolledBack && n == 2; got != tc.fenced {
				t.Fatalf("meta gen %q, %d shard fences: fenced %v, want %v", gen, n, got, tc.fenced)
			}
			if !tc.fenced && (gen != tc.meta || n != 0) {
				t.Fatalf("meta gen %q (was %q), %d shard fences written: want nothing changed", gen, tc.meta, n)
			}
		})
	}
}
