package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
)

// Entry is a journal entry read for a consumer group: its stream id and what it says. Err
// says why its values do not decode (inventory.ParseJournalEntry), and Reservation then
// holds the fields read before the fault; the caller decides what a malformed entry is
// worth.
type Entry struct {
	ID          string
	Reservation inventory.JournalReservation
	Err         error
}

// Ack is a journal entry handed on: its stream id and the units it claims.
type Ack struct {
	ID    string
	Units int64
}

// Reader reads journal streams as one consumer of one consumer group and acknowledges what
// it handed on. It keeps no state between calls: safe for concurrent use.
type Reader struct {
	rdb             redis.UniversalClient
	group, consumer string
	ack             *lua.Script
}

// NewReader returns a reader on rdb for consumer of group; an error means the embedded
// script did not load.
func NewReader(rdb redis.UniversalClient, group, consumer string) (*Reader, error) {
	ack, err := lua.Open("inventory_ack.lua")
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Reader{rdb: rdb, group: group, consumer: consumer, ack: ack}, nil
}

// Read returns up to count entries of stream never delivered to the group (XREADGROUP >,
// without blocking), pending for this consumer from now on; none when there are none. The
// error is Redis's (NOGROUP when the group or the stream is gone).
func (r *Reader) Read(ctx context.Context, stream string, count int) ([]Entry, error) {
	res, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: r.group, Consumer: r.consumer,
		Streams: []string{stream, ">"}, Count: int64(count), Block: -1}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, s := range res {
		out = append(out, decode(s.Messages)...)
	}
	return out, nil
}

// Claim takes over for this consumer up to count entries of stream pending for the group
// longer than minIdle (XAUTOCLAIM from the start of the stream). The error is Redis's.
func (r *Reader) Claim(ctx context.Context, stream string, minIdle time.Duration, count int) ([]Entry, error) {
	msgs, _, err := r.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: stream, Group: r.group,
		MinIdle: minIdle, Start: "0-0", Count: int64(count), Consumer: r.consumer}).Result()
	if err != nil {
		return nil, err
	}
	return decode(msgs), nil
}

// decode reads the entries' values.
func decode(msgs []redis.XMessage) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		je, err := inventory.ParseJournalEntry(m.Values)
		out[i] = Entry{ID: m.ID, Reservation: je, Err: err}
	}
	return out
}

// Ack acknowledges entries of one journal stream that were handed to the queue, for the
// group: each entry's units count as relayed once, however many readers acknowledge it.
// The entries acknowledged now then leave the journal, which holds exactly the entries not
// yet acknowledged (one trim below the oldest the group still needs, and a delete by id of
// those acknowledged ahead of an older pending one).
// It returns the entries and units acknowledged now.
func (r *Reader) Ack(ctx context.Context, stream string, entries []Ack) (acked, units int64, err error) {
	k, ok := Stream(stream)
	if !ok {
		return 0, 0, fmt.Errorf("%w: journal %q", inventory.ErrInvalid, stream)
	}
	args := make([]any, 0, 1+2*len(entries))
	args = append(args, r.group)
	for _, e := range entries {
		args = append(args, e.ID, e.Units)
	}
	res, err := r.ack.Run(ctx, r.rdb, []string{k.Journal(), k.Stats()}, args...).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("journal: ack %s: %w", stream, err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("journal: inventory_ack.lua returned %v", res)
	}
	return res[0], res[1], nil
}
