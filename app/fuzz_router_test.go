//go:build integration

package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// 2,000 /24s of 100.64.0.0/10 beside the proxies the seeds use: the trusted list is
	// matched by search (prefixSet), every hop of a forwarded chain against all of them.
	var many strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&many, ", 100.%d.%d.0/24", 64+i/256, i%256)
	}
	cfg := testConfig + "trustedProxies: [127.0.0.1/32, \"::1/128\", 10.0.0.0/8" + many.String() + "]\n" +
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
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "alice", "k1", "web", "", "127.0.0.1:1", []byte(`{"quantity":1}`))
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "alice ", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "bob", "k2", "", "198.51.100.1\n203.0.113.7", "127.0.0.1:9", []byte(""))
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "v6", "", "", "2001:db8:bad::1, 10.0.0.1", "[::1]:9", []byte(`{"quantity":2}`))
	f.Add(uint8(0), uint8(1), uint8(2), uint16(0), tokenAct, "carol", "k3", "app", "", "[fe80::1%eth0]:4", []byte(`{"token":"x"}`))
	f.Add(uint8(0), uint8(1), uint8(3), uint16(0), tokenAct, "carol", "", "", "", "10.1.2.3:5", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), later, "", "", "", "", "garbage", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(4), uint16(0), open+".0.0.1", "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(5), uint16(0), "", "", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(4), uint8(6), uint16(0), "../../x", "\u202e", strings.Repeat("k", 129), "bad.channel", ",,,", "", []byte("{"))
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "dave", "", "", "", "127.0.0.1:1", bytes.Repeat([]byte("a"), 5000))
	// Round two's bounds: duplicate and case-folded keys, a token for an activity that needs
	// none, a forwarded chain past maxForwardedHops, a user id ending in a no-break space.
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "erin", "", "", "", "127.0.0.1:1", []byte(`{"quantity":2,"quantity":1}`))
	f.Add(uint8(0), uint8(1), uint8(1), uint16(0), open, "erin", "", "", "", "127.0.0.1:1", []byte(`{"QUANTITY":1}`))
	f.Add(uint8(0), uint8(1), uint8(2), uint16(0), open, "erin", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), open, "erin", "", "", strings.Repeat("10.0.0.1,", 1200)+"198.51.100.9", "127.0.0.1:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), open, "erin\u00a0", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(1), uint8(1), uint16(0), open, "alice", "k1", "web", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(0), uint16(0), open, "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(1), uint8(2), uint16(0), open, "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(4), uint16(0), "x.0.0.1", "alice", "", "", "", "127.0.0.1:1", []byte(""))
	f.Add(uint8(1), uint8(0), uint8(7), uint16(0), "", "", "", "", "", "127.0.0.1:1", []byte(""))

	// Round two, the bounds of the server around the router. which bit 1: the request goes
	// over a real connection to the instance's listener (headers bounded at maxHeaderBytes:
	// pad makes the header block any size); bit 2: the body stalls after its bytes, as a read
	// past bodyTimeout does. Seeds put the header block at the bound and one byte past it.
	for _, over := range []int{0, 1} {
		head := len(rawHead("GET", "/api/v1/activities/"+open, routerHeaders("erin", "", "", "", 0), 0))
		pad := maxHeaderBytes - head - len("X-Pad: \r\n") + over
		f.Add(uint8(2), uint8(0), uint8(0), uint16(pad), open, "erin", "", "", "", "127.0.0.1:1", []byte(""))
	}
	f.Add(uint8(2), uint8(1), uint8(1), uint16(0), open, "erin", "", "", "198.51.100.9"+strings.Repeat(", 10.0.0.1", 1200), "", []byte(`{"quantity":1}`))
	f.Add(uint8(3), uint8(1), uint8(1), uint16(20000), open, "erin", "", "", "", "", []byte(`{"quantity":1}`))
	f.Add(uint8(4), uint8(1), uint8(1), uint16(0), open, "erin", "k9", "", "", "127.0.0.1:1", []byte(`{"quantity":1}`))
	f.Add(uint8(4), uint8(1), uint8(1), uint16(0), "nowhere", "erin", "", "", "", "127.0.0.1:1", []byte(`{"quan`))
	f.Add(uint8(4), uint8(1), uint8(2), uint16(0), tokenAct, "", "", "", "", "127.0.0.1:1", bytes.Repeat([]byte(" "), 4097))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), open, "erin", "", "", "", "203.0.113.7:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), open, "erin", "", "", "", "[2001:db8:bad:1::9]:1", []byte(""))
	f.Add(uint8(0), uint8(0), uint8(0), uint16(0), open, "erin", "", "", "", "100.64.3.4:1", []byte(""))

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
	f.Fuzz(func(t *testing.T, which, method, path uint8, pad uint16, id, user, idem, channel, xff, remote string, body []byte) {
		ta := ready
		if which&1 == 1 {
			ta = unready
		}
		p := paths[int(path)%len(paths)](id)
		u, err := url.Parse("http://seckill.test" + p)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return // not a request an HTTP server would deliver
		}
		m := methods[int(method)%len(methods)]
		hdr := routerHeaders(user, idem, channel, xff, int(pad))
		if which&2 != 0 {
			socketBudget.wait()
			sendRaw(t, ta, m, u, hdr, body)
			return
		}
		br := &eofReader{r: bytes.NewReader(body), stall: which&4 != 0}
		req := &http.Request{
			Method: m, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "seckill.test", RemoteAddr: remote,
			Body: io.NopCloser(br), ContentLength: int64(len(body)),
		}
		for _, kv := range hdr {
			req.Header.Add(kv[0], kv[1])
		}
		rec := httptest.NewRecorder()
		ta.server.Handler.ServeHTTP(rec, req)
		checkContract(t, req, rec)
		if len(body) > 0 && !br.eof && rec.Header().Get("Connection") != "close" {
			// The server would go on reading the rest, or parse it as the next request.
			t.Fatalf("%s %q answered %d before its body's end without closing the connection", m, u.Path, rec.Code)
		}
		checkShare(t, ready, remote)
	})
}

// routerHeaders are the headers of a fuzzed request, in the order sent: only values an
// HTTP/1.1 server delivers (an empty one means "absent"), X-Forwarded-For one line per line
// of xff, and pad bytes of X-Pad.
func routerHeaders(user, idem, channel, xff string, pad int) [][2]string {
	var h [][2]string
	set := func(k, v string) {
		if v != "" && validHeaderValue(v) {
			h = append(h, [2]string{k, v})
		}
	}
	set("X-User-Id", user)
	set("Idempotency-Key", idem)
	set("X-Channel", channel)
	for _, line := range strings.Split(xff, "\n") {
		set("X-Forwarded-For", line)
	}
	if pad > 0 {
		set("X-Pad", strings.Repeat("p", pad))
	}
	return h
}

// rawHead is the request line and header block sendRaw writes, blank line included.
func rawHead(method, uri string, hdr [][2]string, bodyLen int) string {
	var b strings.Builder
	b.WriteString(method + " " + uri + " HTTP/1.1\r\nHost: seckill.test\r\nConnection: close\r\n")
	if bodyLen > 0 {
		b.WriteString("Content-Length: " + strconv.Itoa(bodyLen) + "\r\n")
	}
	for _, kv := range hdr {
		b.WriteString(kv[0] + ": " + kv[1] + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// socketBudget paces the real connections FuzzRouter opens (at most 200 a second in each
// fuzzing process), so a long run does not use up the machine's ephemeral ports.
var socketBudget = &pacer{every: 5 * time.Millisecond}

type pacer struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

// wait returns once every has passed since the last return.
func (p *pacer) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := time.Until(p.next); d > 0 {
		time.Sleep(d) // pacing, not synchronisation
	}
	p.next = time.Now().Add(p.every)
}

// sendRaw sends the request over a connection of its own to ta's storefront listener and
// checks the answer: a header block over maxHeaderBytes is 431 and one within it never is;
// what net/http answers itself (a request it cannot parse) is a plain 400 or 431; every
// other answer keeps the contract of checkContract.
func sendRaw(t *testing.T, ta *testApp, method string, u *url.URL, hdr [][2]string, body []byte) {
	t.Helper()
	head := rawHead(method, u.RequestURI(), hdr, len(body))
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(ta.base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(append([]byte(head), body...)) // the server may answer and close first
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %q (%d bytes of headers): no answer: %v", method, u.RequestURI(), len(head), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	what := fmt.Sprintf("%s %q with %d bytes of request line and headers", method, u.RequestURI(), len(head))
	if over := len(head) > maxHeaderBytes; over != (resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge) {
		t.Fatalf("%s: %d %s (the bound is %d bytes)", what, resp.StatusCode, b, maxHeaderBytes)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && resp.StatusCode >= 400 {
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("%s: %d without the JSON error model: %q", what, resp.StatusCode, b)
		}
		return // net/http's own answer to a request it would not deliver
	}
	rec := httptest.NewRecorder()
	for k, v := range resp.Header {
		rec.Header()[k] = v
	}
	rec.WriteHeader(resp.StatusCode)
	_, _ = rec.Write(b)
	req := &http.Request{Method: method, URL: u, Header: http.Header{}, RemoteAddr: c.LocalAddr().String()}
	checkContract(t, req, rec)
}

// eofReader is a request body that records whether it was read to its end; stall makes it
// end with the error of a read deadline instead (bodyTimeout passed) after its bytes.
type eofReader struct {
	r     io.Reader
	stall bool
	eof   bool
}

func (b *eofReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		if b.stall {
			return n, os.ErrDeadlineExceeded
		}
		b.eof = true
	}
	return n, err
}

// checkShare: a connection limiter at the default cap admits from remote (as a connection's
// address would read) exactly its share when remote names a client that is not a trusted
// proxy of ta, and otherwise does not count it against any share.
func checkShare(t *testing.T, ta *testApp, remote string) {
	t.Helper()
	l := newConnLimiter(DefaultMaxConns)
	l.exempt = func(a netip.Addr) bool { return ta.cfg.Current().Cfg.TrustedProxy(a) }
	key, addr := addrKey(&fakeConn{remote: strAddr(remote)})
	limited := key.IsValid() && !l.exempt(addr)
	n := 0
	for n <= l.maxPerAddr && l.admit(&fakeConn{remote: strAddr(remote)}) {
		n++
	}
	if limited && n != l.maxPerAddr || !limited && n != l.maxPerAddr+1 {
		t.Fatalf("remote %q (key %v, limited %v): %d connections admitted, share %d", remote, key, limited, n, l.maxPerAddr)
	}
}

// strAddr is a connection's remote address as its String reads.
type strAddr string

func (a strAddr) Network() string { return "tcp" }
func (a strAddr) String() string  { return string(a) }

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
