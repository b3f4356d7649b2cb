package scenario

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestCheckTarget(t *testing.T) {
	tests := []struct {
		give        string
		allowRemote bool
		wantErr     string
	}{
		{give: "http://127.0.0.1:8080"},
		{give: "http://127.0.0.2:8080"},
		{give: "http://localhost:8080"},
		{give: "https://LOCALHOST"},
		{give: "http://[::1]:8080"},
		{give: "http://10.0.0.1:8080", wantErr: "not a loopback"},
		{give: "http://192.0.2.1", wantErr: "not a loopback"},
		{give: "http://seckill.example.com:8080", wantErr: "not a loopback"},
		{give: "http://localhost.example.com", wantErr: "not a loopback"},
		{give: "http://127.0.0.1.nip.io", wantErr: "not a loopback"},
		{give: "http://[::ffff:10.0.0.1]:80", wantErr: "not a loopback"},
		{give: "http://10.0.0.1:8080", allowRemote: true},
		{give: "ftp://127.0.0.1", wantErr: "want http"},
		{give: "127.0.0.1:8080", wantErr: `target "127.0.0.1:8080"`},
		{give: "http://127.0.0.1:8080/api", wantErr: "without path"},
	}
	for _, tt := range tests {
		err := checkTarget(tt.give, tt.allowRemote)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("checkTarget(%q, %v) = %v, want ok", tt.give, tt.allowRemote, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("checkTarget(%q, %v) = %v, want error with %q", tt.give, tt.allowRemote, err, tt.wantErr)
		}
	}
}

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags([]string{
		"--target", "http://127.0.0.1:8080/", "--target=http://127.0.0.1:8081,http://localhost:8082",
		"--activity", "flash-1", "--users", "10000", "--connections", "32", "--duration", "5s",
		"--max-requests", "100", "--bots", "0.1", "--max-retry-wait", "300ms", "--stock", "1000",
		"--per-user-limit", "2", "--channel", "app", "--json", "out.json",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081", "http://localhost:8082"}
	if strings.Join(c.Targets, " ") != strings.Join(want, " ") {
		t.Errorf("targets %v, want %v", c.Targets, want)
	}
	if c.Activity != "flash-1" || c.Users != 10000 || c.Connections != 32 || c.Duration != 5*time.Second ||
		c.MaxRequests != 100 || c.Bots != 0.1 || c.MaxRetryWait != 300*time.Millisecond || c.Stock != 1000 ||
		c.PerUserLimit != 2 || c.Channel != "app" || c.JSONPath != "out.json" || !c.Retry || c.Quantity != 1 {
		t.Errorf("parsed %+v", c)
	}

	bad := []struct {
		give    []string
		wantErr string
	}{
		{[]string{"--activity", "a"}, "no target"},
		{[]string{"--target", "http://10.1.2.3:80", "--activity", "a"}, "not a loopback"},
		{[]string{"--target", "http://127.0.0.1:80"}, "activity"},
		{[]string{"--target", "http://127.0.0.1:80", "--activity", "a b"}, "activity"},
		{[]string{"--target", "http://127.0.0.1:80", "--activity", "a", "--duration", "0"}, "unbounded"},
		{[]string{"--target", "http://127.0.0.1:80", "--activity", "a", "--bots", "1.5"}, "bots"},
		{[]string{"--target", "http://127.0.0.1:80", "--activity", "a", "--create"}, "--create needs"},
		{[]string{"--target", "http://127.0.0.1:80", "--activity", "a", "extra"}, "unexpected"},
	}
	for _, tt := range bad {
		if _, err := ParseFlags(tt.give, io.Discard); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseFlags(%q) = %v, want error with %q", tt.give, err, tt.wantErr)
		}
	}
	if c, err := ParseFlags([]string{"--target", "http://10.1.2.3:80", "--activity", "a", "--allow-remote"}, io.Discard); err != nil || !c.AllowRemote {
		t.Errorf("--allow-remote: %v", err)
	}
}
