package testsvc

import (
	"sync"
	"testing"
)

// Boot runs boot (a private server's start) in a goroutine of its own. The test's cleanup
// waits for it to end and then runs stop, which so sees every process boot started; ready
// waits for it and fails t when it failed. A test may call t.Parallel between Boot and ready,
// so that the boot overlaps the package's sequential tests.
func Boot(t testing.TB, boot func() error, stop func()) (ready func()) {
	booted := make(chan error, 1)
	go func() { booted <- boot() }()
	var once sync.Once
	var err error
	wait := func() { once.Do(func() { err = <-booted }) }
	t.Cleanup(func() { wait(); stop() })
	return func() {
		t.Helper()
		if wait(); err != nil {
			t.Fatal(err)
		}
	}
}
