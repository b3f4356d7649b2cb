package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     int
		wantOut  string
		wantErrS string
	}{
		{name: "help", args: []string{"--help"}, want: 0, wantOut: "--writer-rate  (SECKILL_WRITER_RATE, default 5000)"},
		{name: "short help", args: []string{"-h"}, want: 0, wantOut: "SECKILL_ADMIN_ADDR"},
		{name: "bad variable", env: map[string]string{"SECKILL_WRITER_RATE": "fast"}, want: 2, wantErrS: `SECKILL_WRITER_RATE="fast": want an integer >= 0`},
		{name: "bad flag", args: []string{"--mysql-pool=abc"}, want: 2, wantErrS: `invalid value "abc" for flag -mysql-pool: want an integer >= 1`},
		{name: "short production token", env: map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:1", "SECKILL_ADMIN_TOKEN": "change-me"}, want: 2, wantErrS: "want at least 32"},
		{name: "production without a config", env: map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:1", "SECKILL_ADMIN_TOKEN": strings.Repeat("a", 64)},
			args: []string{"--http-addr=127.0.0.1:0", "--admin-addr=off", "--data-dir=" + t.TempDir()}, want: 1, wantErrS: "the compiled-in default is used in the embedded mode only"},
		{name: "explicit config file missing", args: []string{"--config-file=/nonexistent/seckill.yaml", "--http-addr=127.0.0.1:0", "--admin-addr=", "--data-dir=" + t.TempDir()}, want: 1, wantErrS: "/nonexistent/seckill.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(tt.args, func(k string) string { return tt.env[k] }, &out, &errb)
			if got != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tt.want, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Fatalf("stdout lacks %q:\n%s", tt.wantOut, out.String())
			}
			if !strings.Contains(errb.String(), tt.wantErrS) {
				t.Fatalf("stderr lacks %q:\n%s", tt.wantErrS, errb.String())
			}
		})
	}
}
