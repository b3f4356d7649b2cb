package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// hangBound is how long a step may take before the test calls it a hang.
const hangBound = 5 * time.Second

// echoServer accepts connections and echoes every byte back until the client half-closes.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, conns: make(map[net.Conn]struct{})}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns[c] = struct{}{}
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				io.Copy(c, c)
				c.Close()
				e.mu.Lock()
				delete(e.conns, c)
				e.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(e.close)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func newProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := New("127.0.0.1:0", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, hangBound)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes a line and reads it back through c.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(hangBound))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if got != line+"\n" {
		t.Fatalf("echo = %q, want %q", got, line+"\n")
	}
}

func TestForwardsBothWays(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	if p.Addr() == "" || strings.HasSuffix(p.Addr(), ":0") {
		t.Fatalf("Addr() = %q, want a resolved address", p.Addr())
	}
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	for _, line := range []string{"hello", strings.Repeat("x", 100_000), "bye"} {
		roundTrip(t, c, r, line)
	}
}

func TestHalfCloseIsForwarded(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	c.SetDeadline(time.Now().Add(hangBound))
	if _, err := io.WriteString(c, "last words"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// The echo server ends its copy only when it sees our EOF through the proxy, then closes,
	// and that close must come back to us as EOF after the data.
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got) != "last words" {
		t.Fatalf("got %q", got)
	}
}

func TestLatencyIsAddedToOpenConnections(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "warm") // the connection exists before the latency is set

	const lat = 60 * time.Millisecond
	p.SetLatency(lat)
	if p.Latency() != lat {
		t.Fatalf("Latency() = %v", p.Latency())
	}
	start := time.Now()
	roundTrip(t, c, r, "slow")
	// One chunk each way, each held for lat: the round trip cannot be shorter than 2*lat.
	if rtt := time.Since(start); rtt < 2*lat {
		t.Fatalf("round trip %v with latency %v each way, want >= %v", rtt, lat, 2*lat)
	}

	// A new connection sees it too.
	c2 := dial(t, p.Addr())
	start = time.Now()
	roundTrip(t, c2, bufio.NewReader(c2), "slow too")
	if rtt := time.Since(start); rtt < 2*lat {
		t.Fatalf("round trip on a new connection %v, want >= %v", rtt, 2*lat)
	}

	p.SetLatency(-time.Second)
	if p.Latency() != 0 {
		t.Fatalf("negative latency stored as %v, want 0", p.Latency())
	}
	roundTrip(t, c, r, "fast again")
}

func TestDisableDropsAndRefusesThenEnableRestores(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")
	addr := p.Addr()

	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	if p.Enabled() {
		t.Fatal("Enabled() after Disable")
	}
	// The open connection is dropped: a read ends with EOF or an error, not a timeout.
	c.SetReadDeadline(time.Now().Add(hangBound))
	_, err := r.ReadString('\n')
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read on a connection of a disabled proxy: %v, want EOF or reset", err)
	}
	// New connections are refused.
	if nc, err := net.DialTimeout("tcp", addr, hangBound); err == nil {
		nc.Close()
		t.Fatal("dial succeeded while disabled")
	}
	if err := p.Disable(); err != nil { // idempotent
		t.Fatal(err)
	}

	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("address changed across Enable: %s -> %s", addr, p.Addr())
	}
	c2 := dial(t, addr)
	roundTrip(t, c2, bufio.NewReader(c2), "after")
	if err := p.Enable(); err != nil { // idempotent
		t.Fatal(err)
	}
	roundTrip(t, c2, bufio.NewReader(c2), "still")
}

func TestCloseEndsEverythingWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		e := newEcho(t)
		p, err := New("127.0.0.1:0", e.addr())
		if err != nil {
			t.Fatal(err)
		}
		p.SetLatency(20 * time.Millisecond)
		var conns []net.Conn
		for i := 0; i < 8; i++ {
			c := dial(t, p.Addr())
			roundTrip(t, c, bufio.NewReader(c), "x")
			conns = append(conns, c)
		}
		// A chunk is in flight, held by the latency, when Close comes.
		io.WriteString(conns[0], "pending\n")
		p.Disable()
		p.Enable()
		c := dial(t, p.Addr())
		roundTrip(t, c, bufio.NewReader(c), "y")
		if p.Conns() == 0 {
			t.Fatal("Conns() = 0 with a connection open")
		}

		done := make(chan struct{})
		go func() { p.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(hangBound):
			t.Fatal("Close hangs")
		}
		if p.Conns() != 0 {
			t.Fatalf("Conns() = %d after Close", p.Conns())
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := p.Enable(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Enable after Close: %v, want ErrClosed", err)
		}
		if err := p.Disable(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Disable after Close: %v, want ErrClosed", err)
		}
		if nc, err := net.DialTimeout("tcp", p.Addr(), hangBound); err == nil {
			nc.Close()
			t.Fatal("dial succeeded after Close")
		}
		for _, c := range conns {
			c.Close()
		}
		c.Close()
		e.close()
	}()

	testwait.Eventually(t, hangBound, func() bool { return runtime.NumGoroutine() <= before },
		"goroutines back to %d after Close:\n%v", before, testwait.Lazy(func() string {
			buf := make([]byte, 1<<16)
			return string(buf[:runtime.Stack(buf, true)])
		}))
}

func TestUpstreamDownClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := newProxy(t, dead)
	c := dial(t, p.Addr())
	c.SetReadDeadline(time.Now().Add(hangBound))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read with the upstream down: %v, want EOF or reset", err)
	}
}
