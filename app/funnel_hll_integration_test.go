//go:build integration

package app

import (
	"strconv"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
)

// The sketches the funnel merges into Redis are read by Redis as its own HyperLogLogs: PFMERGE
// takes them and PFCOUNT answers exactly what the sketch's own count computes, also after
// merging two instances' sketches.
func TestHLLSketchMergesIntoRedis(t *testing.T) {
	for name, rdb := range testsvc.RedisServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := "sk:{" + uniq(t, "hll") + "}:hll:tried"
			var a, b, union hllSketch
			for i := 0; i < 30_000; i++ {
				h := userHash64("u" + strconv.Itoa(i))
				union.add(h)
				if i%3 == 0 {
					a.add(h)
				} else {
					b.add(h)
				}
			}
			for _, s := range []*hllSketch{&a, &b} {
				if err := rdb.Set(ctx, key+":merge", s.dense(nil), 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.PFMerge(ctx, key, key, key+":merge").Err(); err != nil {
					t.Fatal(err)
				}
			}
			got, err := rdb.PFCount(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := union.count(); uint64(got) != want {
				t.Fatalf("PFCOUNT %d, the sketch counts %d", got, want)
			}
			if d := float64(got) - 30_000; d*d > 975*975 {
				t.Fatalf("PFCOUNT %d of 30000 distinct", got)
			}
			rdb.Del(ctx, key, key+":merge")
		})
	}
}
