//go:build integration

package config

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// Nacos stops and starts again: the service keeps its snapshot meanwhile and picks up an
// edit made after the restart within 5 s. The server is a private Java Nacos (the jars of
// scripts/services.sh, auth on, its own ports and data dir) so the shared one stays up. The
// instance runs in a child process because nacos-sdk-go v2.3.2 has a data race of its own on
// reconnect, which -race would pin on this test (startChild still fails the test on any race
// that touches our code).
func TestNacosRestart(t *testing.T) {
	// The first boot runs in the background while the package's later sequential tests run;
	// t.Parallel lets them finish before the rest. TestNacosPropagationThreeInstances, whose
	// 1 s bound a boot beside it broke, runs before this launch: its file sorts first.
	srv, ready := testsvc.LaunchNacos(t, t.TempDir())
	t.Parallel()
	ready()
	addr := srv.Addr

	id := uniqueDataID(t)
	doc1 := "limits: {user: {rate: 1, burst: 1}}\n"
	publish(t, addr, id, doc1)
	srv.Admin.WaitContent(t, "", id, DefaultGroup, doc1, 10*time.Second)
	events := make(chan childEvent, 64)
	startChild(t, 0, addr, id, events)
	waitEvent := func(want string, d time.Duration) bool {
		deadline := time.After(d)
		for {
			select {
			case ev := <-events:
				if ev.version == want {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !waitEvent(versionOf(t, doc1), 15*time.Second) {
		t.Fatal("instance did not load the initial config")
	}

	srv.Stop()
	var ev childEvent
	testwait.Never(t, 3*time.Second, func() bool {
		select {
		case ev = <-events:
			return true
		default:
			return false
		}
	}, "snapshot replaced while nacos was down: %+v", testwait.Lazy(func() string { return fmt.Sprintf("%+v", ev) }))

	srv.Restart()
	back := time.Now()
	doc2 := "limits: {user: {rate: 2, burst: 2}}\n"
	publish(t, addr, id, doc2)
	if !waitEvent(versionOf(t, doc2), 5*time.Second) {
		t.Fatal("edit made after the restart not applied within 5 s")
	}
	t.Logf("edit made after the restart applied %v after nacos was back", time.Since(back))
}
