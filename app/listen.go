package app

import (
	"net"
	"net/http"
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
)

// newServer is an http.Server with every timeout set deliberately.
func newServer(h http.Handler, write time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      write,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// connLimiter caps the open connections of one http.Server. Its listener admits a new
// connection while fewer than max are open; at the cap it first closes connections that are
// idle between requests and connections that have sent nothing for newConnGrace, then, if
// still full, answers the new one 503 with Retry-After and closes it, so a flood of idle
// connections can neither exhaust file descriptors nor keep a real client unanswered. Past
// pressureRatio of the cap, a connection is closed as soon as it becomes idle instead of being
// kept alive. Safe for concurrent use; wire it with limitListener and its ConnState hook.
type connLimiter struct {
	max       int
	now       func() time.Time
	mu        sync.Mutex
	conns     map[net.Conn]connInfo
	rejecting chan struct{}
	wg        sync.WaitGroup // the goroutines answering 503
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, now: time.Now, conns: make(map[net.Conn]connInfo), rejecting: make(chan struct{}, maxRejecting)}
}

// open is the number of connections counted against the cap.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// ConnState is the http.Server hook that keeps the limiter's view of each connection.
func (l *connLimiter) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	case http.StateIdle:
		if _, ok := l.conns[c]; !ok {
			return
		}
		if float64(len(l.conns)) >= pressureRatio*float64(l.max) {
			delete(l.conns, c)
			c.Close()
			return
		}
		l.conns[c] = connInfo{state: st, since: l.now()}
	default:
		if info, ok := l.conns[c]; ok {
			info.state = st
			l.conns[c] = info
		}
	}
}

// admit counts c against the cap, making room if needed; false means c is over the cap.
func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		l.reclaimLocked()
	}
	if len(l.conns) >= l.max {
		return false
	}
	l.conns[c] = connInfo{state: http.StateNew, since: l.now()}
	return true
}

// reclaimLocked closes idle keep-alive connections and connections silent past the grace.
func (l *connLimiter) reclaimLocked() {
	now := l.now()
	for c, info := range l.conns {
		if info.state == http.StateIdle || info.state == http.StateNew && now.Sub(info.since) >= newConnGrace {
			delete(l.conns, c)
			c.Close()
		}
	}
}

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
