// Package faultproxy is a small TCP proxy for fault drills: it sits between a client and a
// server (Redis, MySQL, a name server) and can add latency to every chunk in both directions or
// play a server that went down.
//
// A Proxy owns every goroutine it starts; Close stops them all and waits for them.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by operations on a Proxy after Close.
var ErrClosed = errors.New("faultproxy: closed")

const (
	chunkSize   = 32 << 10 // bytes read from one side at a time
	chunkQueue  = 64       // chunks buffered per direction before the reader blocks
	dialTimeout = 5 * time.Second
)

// Proxy forwards TCP connections from its listening address to one upstream address.
// All methods are safe for concurrent use.
type Proxy struct {
	upstream string
	addr     string         // the resolved listening address, fixed for the Proxy's life
	latency  atomic.Int64   // nanoseconds added to every chunk, read per chunk
	wg       sync.WaitGroup // every goroutine the Proxy started

	mu       sync.Mutex
	ln       net.Listener // nil while disabled or closed
	conns    map[*pair]struct{}
	closed   bool
	ctx      context.Context // cancelled by Close: aborts upstream dials in progress
	cancel   context.CancelFunc
	disabled bool
}

// New listens on listenAddr (for example "127.0.0.1:0") and forwards every accepted connection
// to upstreamAddr. The Proxy starts enabled with no latency.
func New(listenAddr, upstreamAddr string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen %s: %w", listenAddr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		upstream: upstreamAddr,
		addr:     ln.Addr().String(),
		ln:       ln,
		conns:    make(map[*pair]struct{}),
		ctx:      ctx,
		cancel:   cancel,
	}
	p.startAcceptingLocked(ln)
	return p, nil
}

// Addr is the address clients connect to ("127.0.0.1:43121"). It stays the same across
// Disable and Enable.
func (p *Proxy) Addr() string { return p.addr }

// Upstream is the address the Proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// SetLatency delays every chunk of bytes, in both directions, by d from the moment it was read
// to the moment it is written on the other side. It applies at once to open connections too.
// Zero (the default) or a negative d adds nothing. Chunks stay in order and are pipelined, so
// the latency does not cap throughput.
func (p *Proxy) SetLatency(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.latency.Store(int64(d))
}

// Latency is the delay set by SetLatency.
func (p *Proxy) Latency() time.Duration { return time.Duration(p.latency.Load()) }

// Disable plays a server that went down: it closes every open connection and stops listening,
// so new connections are refused until Enable. Disabling a disabled Proxy does nothing.
func (p *Proxy) Disable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.disabled = true
	p.dropLocked()
	return nil
}

// Enable listens again on the same address after Disable. Enabling an enabled Proxy does
// nothing. It fails if the address was taken in the meantime.
func (p *Proxy) Enable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.disabled = false
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listen again on %s: %w", p.addr, err)
	}
	p.ln = ln
	p.startAcceptingLocked(ln)
	return nil
}

// Enabled reports whether the Proxy accepts connections.
func (p *Proxy) Enabled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && !p.disabled
}

// Conns is the number of client connections open through the Proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection and waits for every goroutine of the Proxy
// to end. Close is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		p.dropLocked()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// dropLocked stops listening and closes every open connection. The caller holds p.mu.
func (p *Proxy) dropLocked() {
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.close()
	}
}

// startAcceptingLocked starts the accept loop of ln. The caller holds p.mu (or owns p alone).
func (p *Proxy) startAcceptingLocked(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.acceptLoop(ln)
	}()
}

func (p *Proxy) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // the listener was closed by Disable or Close
		}
		p.mu.Lock()
		if p.ln != ln { // disabled or closed between Accept and here
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// serve dials the upstream for the accepted client connection and pumps bytes both ways until
// either side ends or the Proxy drops the connection.
func (p *Proxy) serve(client net.Conn) {
	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		client.Close()
		return
	}
	c := &pair{client: client, upstream: up, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.disabled {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var dirs sync.WaitGroup
	dirs.Add(2)
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		defer dirs.Done()
		p.pipe(c, up, client) // upstream -> client
	}()
	go func() {
		defer p.wg.Done()
		defer dirs.Done()
		p.pipe(c, client, up) // client -> upstream
	}()
	dirs.Wait()
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pair is one proxied connection: the client side and the upstream side.
type pair struct {
	client, upstream net.Conn
	once             sync.Once
	done             chan struct{} // closed when the pair is closed
}

func (c *pair) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.upstream.Close()
	})
}

type chunk struct {
	b  []byte
	at time.Time // when it was read
}

// pipe copies src to dst, holding each chunk until its latency has passed. A reader goroutine
// keeps reading while earlier chunks wait, so the delay is added once per chunk, not summed.
// On EOF from src it half-closes dst after the last chunk; on any error it closes the pair.
func (p *Proxy) pipe(c *pair, dst, src net.Conn) {
	q := make(chan chunk, chunkQueue)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(q)
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case q <- chunk{b: buf[:n], at: time.Now()}:
				case <-c.done:
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					c.close()
				}
				return
			}
		}
	}()

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for ch := range q {
		if wait := time.Until(ch.at.Add(p.Latency())); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.done:
				return
			}
		}
		if _, err := dst.Write(ch.b); err != nil {
			c.close()
			return
		}
	}
	select {
	case <-c.done:
		return
	default:
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.close()
}
