//go:build integration

package waitroom

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testsvc"
)

func TestJoinPollPassOnRedis(t *testing.T) {
	testsvc.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: testsvc.RedisAddr, DisableIdentity: true})
	id := fmt.Sprintf("wr-unit-%d", time.Now().UnixNano())
	fs := &fakeStock{}
	fs.v.ID, fs.v.OpensAt, fs.v.Remaining = id, time.Now().Add(-time.Second), 10
	r, err := New(rdb, fakeSigner{}, fs, func() *config.Config { return nil }, Options{InstanceID: "i1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := config.DefaultWaitingRoom()
	w.Enabled, w.Rate = true, 50
	ctx := context.Background()
	tk, err := r.Join(ctx, id, "u1", true)
	if err != nil {
		t.Fatal(err)
	}
	ln := r.lineOf(id)
	for i := 0; i < 5; i++ {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := r.Status(ctx, id, "u1", tk.N, w, time.Now(), false, time.Now())
	if err != nil || st.State != StateAdmitted {
		t.Fatalf("status %+v %v view %+v", st, err, ln.view.Load())
	}
}
