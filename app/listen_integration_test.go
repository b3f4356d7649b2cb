//go:build integration

package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductionRefusesAMissingConfigFile: with Redis and MySQL configured and no Nacos, a
// missing config file is a start-up error; the compiled-in default (header mode with a
// trusted gateway) is for the embedded mode only, never a silent production fallback.
func TestProductionRefusesAMissingConfigFile(t *testing.T) {
	dir := t.TempDir()
	opts := realOptions(t)
	opts.HTTPAddr, opts.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.ConfigFile, opts.DataDir, opts.Roles, opts.MySQLPool = filepath.Join(dir, "absent.yaml"), dir, "api", 1
	opts.AdminToken = testAdminToken
	a, err := New(t.Context(), opts, discardLog())
	if err == nil {
		a.Close()
		t.Fatalf("production options with a missing config file started (watching %q)", a.opts.ConfigFile)
	}
	if !strings.Contains(err.Error(), "absent.yaml") || !strings.Contains(err.Error(), "embedded") {
		t.Fatalf("error %q, want it to name the missing file and say the default is for the embedded mode only", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seckill.yaml")); err == nil {
		t.Fatalf("the compiled-in default was written to the data dir in production mode")
	}
}
