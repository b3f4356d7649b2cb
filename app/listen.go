package app

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Server timeouts, chosen for a storefront whose requests are small and answered in
// milliseconds. The admin listener uses the same ones except a longer write timeout, because a
// reconciliation walks every shard of every epoch.
const (
	// readHeaderTimeout bounds a client that opens a connection and sends headers slowly.
	readHeaderTimeout = 5 * time.Second
	// readTimeout bounds the whole request, body included (bodies are at most 4 KiB).
	readTimeout = 10 * time.Second
	// writeTimeout bounds the handler and the answer; the reservation path answers in ms.
	writeTimeout      = 10 * time.Second
	adminWriteTimeout = 60 * time.Second
	// idleTimeout is how long a keep-alive connection may wait for its next request when the
	// listener is not under pressure (under pressure idle connections are closed at once).
	idleTimeout = 30 * time.Second
	// maxHeaderBytes bounds request headers (a JWT and a forwarded-for chain fit easily).
	maxHeaderBytes = 16 << 10
	// newConnGrace is how long a connection that has sent nothing is spared when the cap is
	// reached: older silent connections are closed to make room.
	newConnGrace = time.Second
	// pressureRatio is the share of the cap past which idle keep-alive connections are closed
	// as soon as they become idle.
	pressureRatio = 0.75
	// maxRejecting bounds the goroutines answering 503 to connections over the cap; past it a
	// new connection over the cap is closed without an answer.
	maxRejecting = 64
	// bodyTimeout bounds the reading of a request body, from the handler's start: a 4 KiB
	// body that has not arrived by then is refused and its connection closed, so a client
	// sending a byte a second holds a connection for a second, not for readTimeout.
	bodyTimeout = time.Second
	// addrShare is the share of the cap one client address may hold (an IPv6 client by its
	// /64), unless it is a trusted proxy: one client cannot fill the cap alone. An address
	// may always hold minPerAddr (a small cap is a test or a laptop, not a defence).
	addrShare  = 8 // one eighth
	minPerAddr = 64
)

// newServer is an http.Server with every timeout set deliberately.
func newServer(h http.Handler, write time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      write,
		IdleTimeout:       idleTimeout,
		// net/http reads up to MaxHeaderBytes plus 4096 bytes of slack for the request
		// line and headers: take the slack off, so the documented bound is the bound.
		MaxHeaderBytes: maxHeaderBytes - 4096,
	}
}

// connLimiter caps the open connections of one http.Server. Its listener admits a new
// connection while fewer than max are open and its client address (an IPv6 address by its
// /64) holds fewer than max/addrShare of them (a trusted proxy is exempt, see exempt). At the
// cap it first closes connections that are idle between requests and connections whose
// first request has not come whole within newConnGrace (silent, or slow headers), then, if still full, answers the new one 503 with Retry-After and closes it, so a
// flood of idle or slow connections can neither exhaust file descriptors nor keep a real
// client unanswered. Past pressureRatio of the cap, a connection is closed as soon as it
// becomes idle instead of being kept alive. Safe for concurrent use; wire it with
// limitListener and its ConnState hook, and the handler with track.
type connLimiter struct {
	max, maxPerAddr int
	// exempt reports whether an address is a trusted proxy, whose connections carry many
	// clients and are counted against the cap only; nil: none is.
	exempt    func(netip.Addr) bool
	now       func() time.Time
	mu        sync.Mutex
	conns     map[net.Conn]connInfo
	perAddr   map[netip.Prefix]int
	rejecting chan struct{}
	wg        sync.WaitGroup // the goroutines answering 503
}

type connInfo struct {
	state http.ConnState
	since time.Time
	addr  netip.Prefix // the client key counted in perAddr; invalid when exempt
}

func newConnLimiter(limit int) *connLimiter {
	return &connLimiter{max: limit, maxPerAddr: max(minPerAddr, limit/addrShare), now: time.Now,
		conns: make(map[net.Conn]connInfo), perAddr: make(map[netip.Prefix]int), rejecting: make(chan struct{}, maxRejecting)}
}

// open is the number of connections counted against the cap.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// addrKey is the client key of a connection: its IPv4 address or its IPv6 /64, and the
// address itself (what a trusted proxy is matched on: the key of an IPv6 one is its /64's
// first address); both invalid for an address that cannot be parsed.
func addrKey(c net.Conn) (netip.Prefix, netip.Addr) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Prefix{}, netip.Addr{}
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32), a
	}
	p, _ := a.Prefix(64)
	return p, a
}

// dropLocked forgets c and its share of its address.
func (l *connLimiter) dropLocked(c net.Conn, info connInfo) {
	delete(l.conns, c)
	if info.addr.IsValid() {
		if l.perAddr[info.addr]--; l.perAddr[info.addr] <= 0 {
			delete(l.perAddr, info.addr)
		}
	}
}

// ConnState is the http.Server hook that keeps the limiter's view of each connection.
func (l *connLimiter) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	info, ok := l.conns[c]
	if !ok {
		return
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		l.dropLocked(c, info)
	case http.StateIdle:
		if float64(len(l.conns)) >= pressureRatio*float64(l.max) {
			l.dropLocked(c, info)
			c.Close()
			return
		}
		l.conns[c] = connInfo{state: st, since: l.now(), addr: info.addr}
	default:
		info.state = st
		l.conns[c] = info
	}
}

// admit counts c against the cap, making room if needed; false means c is over the cap or
// over its address's share.
func (l *connLimiter) admit(c net.Conn) bool {
	key, addr := addrKey(c)
	if key.IsValid() && l.exempt != nil && l.exempt(addr) {
		key = netip.Prefix{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if key.IsValid() && l.perAddr[key] >= l.maxPerAddr {
		return false
	}
	if len(l.conns) >= l.max {
		l.reclaimLocked()
	}
	if len(l.conns) >= l.max {
		return false
	}
	l.conns[c] = connInfo{state: http.StateNew, since: l.now(), addr: key}
	if key.IsValid() {
		l.perAddr[key]++
	}
	return true
}

// reclaimLocked closes idle keep-alive connections (a request whose headers are still on
// their way on a kept-alive connection is idle too) and new connections whose first request
// has not come whole within the grace (silent, or slow headers). A request stalled in its
// body ends itself within bodyTimeout.
func (l *connLimiter) reclaimLocked() {
	now := l.now()
	for c, info := range l.conns {
		if info.state == http.StateIdle || info.state == http.StateNew && now.Sub(info.since) >= newConnGrace {
			l.dropLocked(c, info)
			c.Close()
		}
	}
}

// track wraps the storefront handler. A request with a body gets bodyTimeout from the
// handler's start to send it (the server's own deadlines cover the headers), and an answer
// written before its body was read whole closes the connection (Connection: close): the
// server then neither waits for the rest of a body nobody needs nor parses it as the next
// request. A request without a body costs nothing more.
func track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
		b := &eofBody{ReadCloser: r.Body}
		r.Body = b
		h.ServeHTTP(&closeUnread{ResponseWriter: w, body: b}, r)
	})
}

// eofBody is a request body that knows whether it was read to its end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// closeUnread is the ResponseWriter of track: it asks for the connection to be closed when
// the answer starts before the body was read to its end.
type closeUnread struct {
	http.ResponseWriter
	body  *eofBody
	wrote bool
}

func (w *closeUnread) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if !w.body.eof {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeUnread) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reject answers a connection over the cap with 503 and closes it, without holding Accept.
func (l *connLimiter) reject(c net.Conn) {
	select {
	case l.rejecting <- struct{}{}:
	default:
		c.Close()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { <-l.rejecting }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		// Read what the client sent so far, so closing does not reset the connection before
		// it reads the answer.
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
			"Connection: close\r\nContent-Length: " + strconv.Itoa(len(overCapBody)) + "\r\n\r\n" + overCapBody))
	}()
}

const overCapBody = `{"code":"UNAVAILABLE","message":"too many connections, retry shortly","retryAfterSeconds":1}`

// wait blocks until every 503 answer under way is written (each takes at most a second).
func (l *connLimiter) wait() { l.wg.Wait() }

// limitListener is a net.Listener whose connections are admitted by a connLimiter.
type limitListener struct {
	net.Listener
	lim *connLimiter
}

// Accept returns the next connection under the cap, answering those over it with 503.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.lim.admit(c) {
			return c, nil
		}
		l.lim.reject(c)
	}
}

var _ net.Listener = (*limitListener)(nil)

// Flush passes a flush through, for a handler that streams.
func (w *closeUnread) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
