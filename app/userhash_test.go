//go:build integration

package app

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/inventory"
)

// TestUserHashKeyOption: with SECKILL_USER_HASH_KEY set, the hash a reservation writes to
// Redis (record field uh, the user's field on the home shard) is the keyed hash under that
// key, and the record keeps the raw id beside it.
func TestUserHashKeyOption(t *testing.T) {
	key := bytes.Repeat([]byte{0x5a}, inventory.MinUserHashKey)
	opts := realOptions(t)
	opts.UserHashKey = key
	ta := startApp(t, opts, testConfig)
	h, err := inventory.NewHasher(key)
	if err != nil {
		t.Fatal(err)
	}
	id := uniq(t, "uhkey")
	ta.createActivity(t, id, 10, 1, 2, time.Now().Add(-time.Second))
	const user = "hash-key-user"
	a := ta.reserve(t, id, user, "")
	if a.status != http.StatusAccepted {
		t.Fatalf("reserve: %d %v", a.status, a.body)
	}
	rid, _ := a.body["reservationId"].(string)
	k, n, ok := inventory.ParseReservationID(rid)
	if !ok {
		t.Fatalf("reservation id %q", rid)
	}
	rec, found, err := inventory.ReadRecord(t.Context(), ta.rdb, k, n)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	want := h.UserHash(user)
	if rec.UserID != user || rec.UserHash != want {
		t.Fatalf("record uid %v uh %v, want %s %s", rec.UserID, rec.UserHash, user, want)
	}
	home := inventory.Shard(id, 0, inventory.HomeShard(want, 2))
	if u, found, err := inventory.ReadUserState(t.Context(), ta.rdb, home, want); err != nil || !found || u.Held != 1 {
		t.Fatalf("units of %s on its home shard %d: %+v (found %v), %v", want, home.Shard, u, found, err)
	}
}
