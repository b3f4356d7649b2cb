package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The attacker of TestOneClientCannotDenyTheStorefront, run in a process of its own (this test
// binary, re-executed) so that its thousands of connections and goroutines are not counted
// in the server's process. Every loop is bounded: new connections at most attackDialRate per
// second in all, each worker stops at the deadline.
const (
	attackEnvAddr    = "SECKILL_TEST_ATTACK_ADDR"
	attackEnvFor     = "SECKILL_TEST_ATTACK_FOR"
	attackFrom       = "127.0.0.2" // loopback, another address than the probe's 127.0.0.1
	attackIdle       = 600         // connections that send nothing and reconnect when closed
	attackSlowBodies = 4200        // POSTs with Content-Length 4096 sending one byte a second
	attackDialRate   = 1000        // new connections per second, all workers together
)

// TestAttackerProcess is not a test: it is the attacker's process (see attackEnvAddr) and
// returns at once in a normal run.
func TestAttackerProcess(t *testing.T) {
	addr := os.Getenv(attackEnvAddr)
	if addr == "" {
		return
	}
	d, err := time.ParseDuration(os.Getenv(attackEnvFor))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	dialTokens := make(chan struct{}, 64)
	go func() {
		tick := time.NewTicker(time.Second / attackDialRate)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case dialTokens <- struct{}{}:
				default:
				}
			}
		}
	}()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackFrom)}, Timeout: time.Second}
	dial := func() net.Conn {
		select {
		case <-ctx.Done():
			return nil
		case <-dialTokens:
		}
		c, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil
		}
		return c
	}
	var dials, held atomic.Int64
	var wg sync.WaitGroup
	worker := func(slow bool, i int) {
		defer wg.Done()
		for ctx.Err() == nil {
			c := dial()
			if c == nil {
				continue
			}
			dials.Add(1)
			held.Add(1)
			_ = c.SetDeadline(deadline)
			if slow {
				// Half to an activity that exists (its body must be read), half to one that
				// does not (answered before the body).
				id := "conn-1"
				if i%2 == 1 {
					id = fmt.Sprintf("nope-%d", i)
				}
				_, err := fmt.Fprintf(c, "POST /api/v1/activities/%s/reservations HTTP/1.1\r\nHost: x\r\n"+
					"X-User-Id: attacker-%d\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", id, i)
				for err == nil && ctx.Err() == nil {
					_, err = c.Write([]byte(" "))
					if err == nil {
						time.Sleep(time.Second)
					}
				}
			} else {
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
			}
			c.Close()
			held.Add(-1)
		}
	}
	for i := range attackIdle + attackSlowBodies {
		wg.Add(1)
		go worker(i >= attackIdle, i)
	}
	wg.Wait()
	fmt.Printf("attacker: %d connections opened\n", dials.Load())
}

// TestOneClientCannotDenyTheStorefront attacks the storefront at the default connection cap
// from one client address (127.0.0.2), with 600 connections that send nothing and reconnect
// as soon as they are closed and 4,200 that post a 4 KiB body at one byte a second (half to
// an unknown activity), 4,800 in all against a cap of 4,096, at most 1,000 new connections a
// second: a well-behaved client at another
// address (127.0.0.1) must keep at least 95 % of its requests answered 200 within 1 s. The
// attack must be real: its address holds its whole share of the cap while the client asks.
func TestOneClientCannotDenyTheStorefront(t *testing.T) {
	if os.Getenv(attackEnvAddr) != "" {
		return
	}
	ta := startApp(t, Options{MaxConns: DefaultMaxConns}, testConfig)
	ta.createActivity(t, "conn-1", 1000, 1000, 2, time.Now().Add(-time.Second))
	addr := strings.TrimPrefix(ta.base, "http://")

	const ramp, probes, every = 6 * time.Second, 100, 100 * time.Millisecond
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), attackEnvAddr+"="+addr, attackEnvFor+"="+(ramp+probes*every+5*time.Second).String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			tail = append(tail, sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		t.Logf("attacker output: %s", strings.Join(tail, " | "))
	})

	attacker := netip.PrefixFrom(netip.MustParseAddr(attackFrom), 32)
	held := func() int {
		ta.conns.mu.Lock()
		defer ta.conns.mu.Unlock()
		return ta.conns.perAddr[attacker]
	}
	time.Sleep(ramp)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	answered, maxHeld := 0, 0
	var slowest time.Duration
	var failures []string
	for i := range probes {
		maxHeld = max(maxHeld, held())
		start := time.Now()
		req, _ := http.NewRequest("GET", ta.base+"/api/v1/activities/conn-1", nil)
		req.Header.Set("X-User-Id", "probe-"+strconv.Itoa(i))
		resp, err := client.Do(req)
		took := time.Since(start)
		switch {
		case err != nil:
			failures = append(failures, err.Error())
		case resp.StatusCode != http.StatusOK || took > time.Second:
			failures = append(failures, fmt.Sprintf("%d in %v", resp.StatusCode, took))
		default:
			answered++
			slowest = max(slowest, took)
		}
		if resp != nil {
			resp.Body.Close()
		}
		time.Sleep(every)
	}
	t.Logf("probe: %d of %d answered 200 within 1 s (slowest %v); the attacker held at most %d connections (share %d of %d)",
		answered, probes, slowest, maxHeld, ta.conns.maxPerAddr, ta.conns.max)
	if answered < probes*95/100 {
		t.Fatalf("the probe got %d of %d answers within 1 s under the attack, want >= 95 %%; failures: %v", answered, probes, failures)
	}
	if maxHeld < ta.conns.maxPerAddr/2 {
		t.Fatalf("the attacker held at most %d connections: the attack did not take its share (%d)", maxHeld, ta.conns.maxPerAddr)
	}
}
