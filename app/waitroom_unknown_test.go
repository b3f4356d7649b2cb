package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// A valid edit that turns on waiting rooms for activities that do not exist costs Redis
// nothing: the room follows only lines of activities the instance holds (before, each of
// 6,000 such rooms cost a pipeline every 100 ms: 71,000 commands a second).
func TestWaitingRoomsOfUnknownActivitiesCostNoRedis(t *testing.T) {
	var b strings.Builder
	b.WriteString(testConfig + "activities:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "  ghost-%d: {waitingRoom: {enabled: true, rate: 50}}\n", i)
	}
	ta := startApp(t, Options{}, b.String())
	ghost := &redishook.Counter{Match: func(_ context.Context, cmd redis.Cmder) bool {
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.HasPrefix(s, "sk:{ghost-") {
				return true
			}
		}
		return false
	}}
	ta.rdb.AddHook(ghost)
	time.Sleep(time.Second)
	if n := ghost.Load(); n != 0 {
		t.Fatalf("%d Redis commands in 1 s for the waiting rooms of 200 activities that do not exist, want 0", n)
	}
}
