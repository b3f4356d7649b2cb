package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// ErrClosed is returned by queue operations after Close.
var ErrClosed = errors.New("order: queue closed")

// memBatch is how many messages MemQueue hands to the handler at once.
const memBatch = 128

// MemQueue is an in-process Publisher and Subscriber for the embedded mode. Delivery is at
// least once within the process: a handler error puts the batch back after a short pause.
// Messages are lost with the process (the journal keeps them: the relay acknowledges a
// journal entry only after Publish, which returns once the message is queued here, so the
// embedded mode loses nothing that it had acknowledged to a client only while the process
// lives). Safe for concurrent use.
type MemQueue struct {
	ch        chan Message
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	mu        sync.Mutex
	started   bool
	retry     time.Duration
	log       *slog.Logger
}

var (
	_ Publisher  = (*MemQueue)(nil)
	_ Subscriber = (*MemQueue)(nil)
)

// NewMemQueue returns a queue holding up to capacity messages; Publish blocks while it is
// full. log (nil: slog's default) gets a handler's panics.
func NewMemQueue(capacity int, log *slog.Logger) *MemQueue {
	if capacity <= 0 {
		capacity = 1
	}
	if log == nil {
		log = slog.Default()
	}
	return &MemQueue{ch: make(chan Message, capacity), closed: make(chan struct{}), retry: 200 * time.Millisecond,
		log: log.With("component", "queue")}
}

// Publish queues the messages in order. It returns ctx's error or ErrClosed when it could
// not queue all of them.
func (q *MemQueue) Publish(ctx context.Context, msgs []Message) error {
	for _, m := range msgs {
		m.Attempt = 0
		select {
		case q.ch <- m:
		case <-ctx.Done():
			return ctx.Err()
		case <-q.closed:
			return ErrClosed
		}
	}
	return nil
}

// Len is the number of queued messages not yet handed to the handler.
func (q *MemQueue) Len() int { return len(q.ch) }

// Subscribe starts one delivery goroutine calling handler with batches of up to 128
// messages. Only one handler may subscribe.
func (q *MemQueue) Subscribe(handler func(ctx context.Context, msgs []Message) error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return errors.New("order: MemQueue already has a subscriber")
	}
	select {
	case <-q.closed:
		return ErrClosed
	default:
	}
	q.started = true
	ctx, cancel := context.WithCancel(context.Background())
	q.wg.Add(2)
	go func() { defer q.wg.Done(); <-q.closed; cancel() }()
	go func() {
		defer q.wg.Done()
		q.deliver(ctx, handler)
	}()
	return nil
}

func (q *MemQueue) deliver(ctx context.Context, handler func(ctx context.Context, msgs []Message) error) {
	var retry []Message
	for {
		batch := retry
		retry = nil
		if len(batch) == 0 {
			select {
			case m := <-q.ch:
				batch = append(batch, m)
			case <-ctx.Done():
				return
			}
		}
	fill:
		for len(batch) < memBatch {
			select {
			case m := <-q.ch:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		for i := range batch {
			batch[i].Attempt++
		}
		if err := safeHandle(ctx, handler, batch, q.log); err != nil {
			retry = batch
			if backoff.Sleep(ctx, q.retry) != nil {
				return
			}
		}
	}
}

// safeHandle calls handler and turns a panic into an error, logged with its stack, so a
// batch is never stuck: the queue delivers it again. It is the queue's one recovery; the
// writer's own (safeWrite) tells a panicking message from its batch.
func safeHandle(ctx context.Context, handler func(ctx context.Context, msgs []Message) error, msgs []Message, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("message handler panicked; the batch will be delivered again", "panic", fmtAny(r),
				"messages", len(msgs), "stack", string(debug.Stack()))
			err = &PanicError{Value: r}
		}
	}()
	return handler(ctx, msgs)
}

// PanicError is a panic recovered from a message handler.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return "order: handler panicked: " + fmtAny(e.Value) }

// Close stops delivery and waits for the handler call in progress. Queued messages are
// dropped (their journal entries were acknowledged; see the type's comment).
func (q *MemQueue) Close() error {
	q.closeOnce.Do(func() { close(q.closed) })
	q.wg.Wait()
	return nil
}

func fmtAny(v any) string { return fmt.Sprint(v) }
