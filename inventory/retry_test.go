package inventory

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// replyLostConn is a client connection that, once armed, lets the next command carrying
// marker reach Redis and run, reads its reply, and then reports the connection broken
// (io.EOF) instead of handing the reply over: what a reply lost on the way looks like to
// go-redis, which then sends the command again (MaxRetries).
type replyLostConn struct {
	net.Conn
	armed  *atomic.Bool
	marker *[]byte
	mu     sync.Mutex
	lose   bool
}

// replyLostClient is a client of the Redis at addr whose connections are replyLostConns of
// armed and marker; go-redis sends a command again once (MaxRetries 1, as app.go sets).
func replyLostClient(t testing.TB, addr string, armed *atomic.Bool, marker *[]byte) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: 1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &replyLostConn{Conn: c, armed: armed, marker: marker}, nil
		}})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func (c *replyLostConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, *c.marker) && c.armed.CompareAndSwap(true, false) {
		c.mu.Lock()
		c.lose = true
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *replyLostConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	lose := c.lose
	c.lose = false
	c.mu.Unlock()
	if !lose {
		return c.Conn.Read(b)
	}
	if _, err := c.Conn.Read(b); err != nil { // the command ran: its reply is here
		return 0, err
	}
	c.Conn.Close()
	return 0, io.EOF
}

// TestReservationRetriedByTheClientAppliesOnce: go-redis sends a command again when the
// connection breaks before the reply (MaxRetries, as app.go configures it). The reservation
// script is not idempotent by itself: run twice it takes two units for one request. A
// reservation whose reply was lost must take one unit and answer that reservation, with and
// without an idempotency key.
func TestReservationRetriedByTheClientAppliesOnce(t *testing.T) {
	for _, key := range []string{"", "k-1"} {
		t.Run("key="+key, func(t *testing.T) {
			mr := miniredis.RunT(t)
			var armed atomic.Bool
			var marker []byte
			rdb := replyLostClient(t, mr.Addr(), &armed, &marker)
			s := newStore(t, rdb, Options{})
			marker = []byte(s.reserve.s.Hash())
			a := mustCreate(t, s, openActivity(t, 10, 5, 1))
			ctx := ctxT(t)
			// Warm the script cache, so the armed command is the EVALSHA that runs.
			if res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "warm", Quantity: 1}); err != nil || res.Code != Reserved {
				t.Fatalf("warm-up: %+v %v", res, err)
			}
			k := Shard(a.ID, 0, 0)
			before, _ := rdb.Get(ctx, k.Stock()).Int64()
			armed.Store(true)
			res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1, IdempotencyKey: key})
			if armed.Load() {
				t.Fatal("setup: the reservation command was never sent through the armed connection")
			}
			after, _ := rdb.Get(ctx, k.Stock()).Int64()
			if before-after != 1 {
				t.Fatalf("one reservation took %d units (answer %+v, %v): the retried script applied again", before-after, res, err)
			}
			if n, _ := rdb.XLen(ctx, k.Journal()).Result(); n != 2 {
				t.Fatalf("%d journal entries, want 2 (the warm-up's and this one's)", n)
			}
			if err != nil || (res.Code != Reserved && res.Code != Replayed) || res.ReservationID == "" {
				t.Fatalf("answer %+v %v, want the reservation", res, err)
			}
			if key == "" && res.Code != Reserved {
				t.Fatalf("a request without a key answered %v, want RESERVED", res.Code)
			}
		})
	}
}
