package config

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// testToken is the access token the dropping server hands out; it must never be printed.
const testToken = "tok-must-not-leak-8f3a"

// droppingNacos starts a server that accepts any login, answering testToken, and drops the
// connection of every other request: the token-bearing call then fails in transit with a
// *url.Error that names its URL. It returns the server's "host:port".
func droppingNacos(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nacos/v1/auth/users/login" {
			w.Write([]byte(`{"accessToken":"` + testToken + `","tokenTtl":18000}`))
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A publish that drops in transit returns an error without the access token.
func TestPublishNacosErrorHidesToken(t *testing.T) {
	err := PublishNacos(context.Background(), droppingNacos(t), "admin", "pw", "", "seckill.yaml", DefaultGroup, []byte("x: 1\n"))
	if err == nil {
		t.Fatal("publish succeeded against a server that drops it")
	}
	if strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "accessToken=REDACTED") {
		t.Fatalf("error %q: want the token replaced by REDACTED", err)
	}
}

// An instance count that drops in transit is logged (at debug) without the access token.
func TestRegistryRefreshLogHidesToken(t *testing.T) {
	addr := droppingNacos(t)
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := &NacosRegistry{Addr: addr, ServiceName: DefaultServiceName, Group: DefaultGroup}
	r.token = nacosToken{addr: addr, username: "admin", password: "pw"}
	r.refresh(log)
	if !strings.Contains(buf.String(), "instance count failed") {
		t.Fatalf("no failure logged:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), testToken) || !strings.Contains(buf.String(), "accessToken=REDACTED") {
		t.Fatalf("log: want the token replaced by REDACTED:\n%s", buf.String())
	}
}

func TestRedactURLError(t *testing.T) {
	tests := []struct {
		name string
		give error
		want string
	}{
		{name: "nil", give: nil, want: ""},
		{name: "not a url error", give: errors.New("accessToken=s3cret"), want: "accessToken=s3cret"},
		{name: "no query", give: &url.Error{Op: "Get", URL: "http://h/x", Err: errors.New("EOF")}, want: `Get "http://h/x": EOF`},
		{name: "token among others",
			give: &url.Error{Op: "Get", URL: "http://h/x?group=G&accessToken=s3cret&dataId=d", Err: context.DeadlineExceeded},
			want: `Get "http://h/x?group=G&accessToken=REDACTED&dataId=d": context deadline exceeded`},
		{name: "credentials, escaped name, empty value",
			give: &url.Error{Op: "Post", URL: "http://h/x?username=admin&Password=pw&access%54oken=s3cret&secretKey=", Err: errors.New("EOF")},
			want: `Post "http://h/x?username=REDACTED&Password=REDACTED&access%54oken=REDACTED&secretKey=REDACTED": EOF`},
		{name: "unparsable URL",
			give: &url.Error{Op: "parse", URL: "http://bad host/x?accessToken=s3cret", Err: errors.New(`invalid character " " in host name`)},
			want: `parse "http://bad host/x?accessToken=REDACTED": invalid character " " in host name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := redactURLError(tt.give); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
