package journal

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
)

// TestReaderReadsClaimsAndAcks drives a journal the way the relay does: the entries never
// delivered come once, decoded (a malformed one with its error), the ones left pending are
// claimed by another consumer, and the acknowledgement counts each entry's units once and
// deletes it.
func TestReaderReadsClaimsAndAcks(t *testing.T) {
	ctx := context.Background()
	k := inventory.Shard("flash-1", 0, 1)
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	uh := "0123456789abcdef0123456789abcdef"
	good := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Journal(), Values: []any{"e", "flash-1.0.1.7|2|7|1700000000000|" + uh + "||alice"}}).Val()
	bad := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Journal(), Values: []any{"e", "flash-1.0.1.8|2|8"}}).Val()
	if err := rdb.XGroupCreate(ctx, k.Journal(), "relay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	a, err := NewReader(rdb, "relay", "a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Read(ctx, k.Journal(), 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("read %+v, %v; want 2 entries", got, err)
	}
	if e := got[0]; e.ID != good || e.Err != nil || e.Reservation.ReservationID != "flash-1.0.1.7" ||
		e.Reservation.Quantity != 2 || e.Reservation.Seq != 7 || e.Reservation.UserID != "alice" || e.Reservation.Shard != 1 {
		t.Errorf("first entry %+v", e)
	}
	if e := got[1]; e.ID != bad || e.Err == nil {
		t.Errorf("malformed entry %+v, want its error", e)
	}
	if again, err := a.Read(ctx, k.Journal(), 10); err != nil || len(again) != 0 {
		t.Fatalf("read again %+v, %v; want none (delivered already)", again, err)
	}

	b, err := NewReader(rdb, "relay", "b")
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := b.Claim(ctx, k.Journal(), 0, 10)
	if err != nil || len(claimed) != 2 || claimed[0].ID != good || claimed[0].Reservation.Seq != 7 || claimed[1].Err == nil {
		t.Fatalf("claimed %+v, %v; want both entries, decoded", claimed, err)
	}

	acks := []Ack{{ID: good, Units: 2}, {ID: bad, Units: 0}}
	if n, units, err := b.Ack(ctx, k.Journal(), acks); err != nil || n != 2 || units != 2 {
		t.Fatalf("ack: %d entries, %d units, %v; want 2, 2", n, units, err)
	}
	if n, units, err := a.Ack(ctx, k.Journal(), acks); err != nil || n != 0 || units != 0 {
		t.Fatalf("second ack: %d entries, %d units, %v; want 0, 0 (counted once)", n, units, err)
	}
	if v := rdb.HGet(ctx, k.Stats(), "relayed").Val(); v != "2" {
		t.Errorf("stats relayed %q, want 2", v)
	}
	if n := rdb.XLen(ctx, k.Journal()).Val(); n != 0 {
		t.Errorf("journal holds %d entries after the ack, want 0", n)
	}
	if _, _, err := a.Ack(ctx, k.Stats(), acks); !errors.Is(err, inventory.ErrInvalid) {
		t.Errorf("ack on a stream that is no journal: %v, want ErrInvalid", err)
	}
	if _, err := a.Read(ctx, inventory.Shard("flash-1", 0, 2).Journal(), 10); !redis.HasErrorPrefix(err, "NOGROUP") {
		t.Errorf("read of a journal without the group: %v, want NOGROUP", err)
	}
}
