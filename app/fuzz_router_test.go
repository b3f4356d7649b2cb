//go:build integration

package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// validHeaderValue reports whether an HTTP/1.1 server would deliver v as a header value: no
// control characters but horizontal tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// FuzzRouter sends arbitrary requests (method, path, identity, X-Forwarded-For lines,
// channel, Idempotency-Key, body, remote address) through the router of a configured
// instance and of one that never loads a configuration, and checks the contract that holds
// for any input: no 5xx but 503; every 503 carries Retry-After and a JSON error body; every
// 4xx is the JSON error model. The seed corpus runs in every `go test`.
func FuzzRouter(f *testing.F) {
	cfg := testConfig + "trustedProxies: [127.0.0.1/32, \"::1/128\", 10.0.0.0/8]\n" +
		"blacklist: {users: [blocked], ips: [203.0.113.7, \"2001:db8:bad::/48\"]}\n"
	ready := startApp(f, realOptions(f), cfg)
	unready := startAppUnready(f, realOptions(f), "killSwitch: [\n")
	open := uniq(f, "fz")
	ready.createActivity(f, open, 50, 2, 2, time.Now().Add(-time.Second))
	tokenAct := uniq(f, "fzt")
	body := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":1,"requireToken":true}`, tokenAct)
	if a := ready.admin(f, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
		f.Fatalf("create %s: %d %v", tokenAct, a.status, a.body)
	}
	later := uniq(f, "fzl")
	ready.createActivity(f, later, 5, 1, 1, time.Now().Add(time.Hour))

	// which: bit 0 = the unready instance; method, path: indexes into the tables below.
	f.Add(uint8(0), uint8(1), uint8(1), open, "alice", "k1", "web", "", "127.0.0.1:1", []byte(`{"quantity":1}`))
	f.Add(uint8(0), uint8(1), uint8(1), open, "alice ", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(1), uint8(1), open, "bob", "k2", "", "198.51.100.1\n203.0.113.7", "127.0.0.1:9", []byte(""))
	f.Add(uint8(0), uint8(1), uint8(1), open, "v6", "", "", "2001:db8:bad::1, 10.0.0.1", "[::1]:9", []byte(`{"quantity":2}`))
	f.Add(uint8(0), uint8(1), uint8(2), tokenAct, "carol", "k3", "app", "", "[fe80::1%eth0]:4", []byte(`{"token":"x"}`))
	f.Add(uint8(0), uint8(1), uint8(3), tokenAct, "carol", "", "", "", "10.1.2.3:5", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), later, "", "", "", "", "garbage", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(4), open+".0.0.1", "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(5), "", "", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(4), uint8(6), "../../x", "\u202e", strings.Repeat("k", 129), "bad.channel", ",,,", "", []byte("{"))
	f.Add(uint8(0), uint8(1), uint8(1), open, "dave", "", "", "", "127.0.0.1:1", bytes.Repeat([]byte("a"), 5000))
	// Round two's bounds: duplicate and case-folded keys, a token for an activity that needs
	// none, a forwarded chain past maxForwardedHops, a user id ending in a no-break space.
	f.Add(uint8(0), uint8(1), uint8(1), open, "erin", "", "", "", "127.0.0.1:1", []byte(`{"quantity":2,"quantity":1}`))
	f.Add(uint8(0), uint8(1), uint8(1), open, "erin", "", "", "", "127.0.0.1:1", []byte(`{"QUANTITY":1}`))
	f.Add(uint8(0), uint8(1), uint8(2), open, "erin", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), open, "erin", "", "", strings.Repeat("10.0.0.1,", 1200)+"198.51.100.9", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), open, "erin\u00a0", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(1), uint8(1), open, "alice", "k1", "web", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(0), open, "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(1), uint8(2), open, "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(4), "x.0.0.1", "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(7), "", "", "", "", "", "127.0.0.1:1", []byte(""))

	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	paths := []func(id string) string{
		func(id string) string { return "/api/v1/activities/" + id },
		func(id string) string { return "/api/v1/activities/" + id + "/reservations" },
		func(id string) string { return "/api/v1/activities/" + id + "/tokens" },
		func(id string) string { return "/api/v1/activities/" + id + "/reservations/" },
		func(id string) string { return "/api/v1/reservations/" + id },
		func(string) string { return "/healthz" },
		func(id string) string { return "/" + id },
		func(string) string { return "/readyz" },
		func(id string) string { return "/admin/v1/activities/" + id + "/reconciliation" },
	}
	f.Fuzz(func(t *testing.T, which, method, path uint8, id, user, idem, channel, xff, remote string, body []byte) {
		ta := ready
		if which&1 == 1 {
			ta = unready
		}
		p := paths[int(path)%len(paths)](id)
		u, err := url.Parse("http://seckill.test" + p)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return // not a request an HTTP server would deliver
		}
		req := &http.Request{
			Method: methods[int(method)%len(methods)], URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "seckill.test", RemoteAddr: remote,
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}
		set := func(k, v string) {
			// The server delivers only valid header values; an empty one means "absent" here.
			if v != "" && validHeaderValue(v) {
				req.Header.Add(k, v)
			}
		}
		set("X-User-Id", user)
		set("Idempotency-Key", idem)
		set("X-Channel", channel)
		for _, line := range strings.Split(xff, "\n") {
			set("X-Forwarded-For", line)
		}
		rec := httptest.NewRecorder()
		ta.server.Handler.ServeHTTP(rec, req)
		checkContract(t, req, rec)
	})
}

// checkContract asserts what every answer of the service keeps, whatever the request.
func checkContract(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	status := rec.Code
	what := fmt.Sprintf("%s %q (headers %q, remote %q)", req.Method, req.URL.Path, req.Header, req.RemoteAddr)
	if status >= 500 && status != http.StatusServiceUnavailable {
		t.Fatalf("%s: %d %s", what, status, rec.Body.String())
	}
	if status < 400 || req.Method == "HEAD" {
		return
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %d with a body that is not JSON: %q", what, status, rec.Body.String())
	}
	if c, _ := body["code"].(string); c == "" {
		t.Fatalf("%s: %d without a code: %v", what, status, body)
	}
	if _, ok := body["message"].(string); !ok {
		t.Fatalf("%s: %d without a message: %v", what, status, body)
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		if rec.Header().Get("Retry-After") == "" || body["retryAfterSeconds"] == nil {
			t.Fatalf("%s: %d without Retry-After: %v", what, status, body)
		}
	}
}
