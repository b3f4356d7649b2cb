package app

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SECKILL_REDIS_TLS_CA_FILE naming a FIFO (nobody writes it) or /dev/zero is refused at once
// with a reason, as the JWT key file is: it neither hangs the start nor fills the memory.
func TestRedisCAFileNotRegularIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ca.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(big, make([]byte, maxCAFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", big} {
		done := make(chan error, 1)
		go func() {
			var uo redis.UniversalOptions
			done <- Options{RedisTLS: true, RedisTLSCAFile: path}.redisAuth(&uo)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "SECKILL_REDIS_TLS_CA_FILE") {
				t.Errorf("CA file %s: %v, want a refusal naming SECKILL_REDIS_TLS_CA_FILE", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("CA file %s: still reading after 5 s", path)
		}
	}
}
