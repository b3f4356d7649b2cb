package testsvc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// PoolPeak samples the open connections of db's pool every 5 ms until the test ends, and
// returns what reads the most seen so far: the check that a pool never grew past its size.
func PoolPeak(t testing.TB, db *gorm.DB) (peak func() int) {
	t.Helper()
	sdb, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	var most atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if n := int64(sdb.Stats().OpenConnections); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(done); wg.Wait() })
	return func() int { return int(most.Load()) }
}
