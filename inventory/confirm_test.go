package inventory

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestConfirmOneCallAsOneByOne: the writer confirms a batch's reservations of one shard in one
// inventory_confirm.lua call, which must answer and leave the records exactly as the same
// confirmations sent one call each: every code (confirmed now, already,
// failed, missing, another buyer's or another id's), a record named twice meeting itself as
// the first left it, and stats.confirmed counting each unit once. Read back from the records
// and the stats hash.
func TestConfirmOneCallAsOneByOne(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s := newStore(t, rdb, Options{})
		l, err := NewLedger(rdb)
		if err != nil {
			t.Fatal(err)
		}
		// two activities in the same state: one confirmed in one call, one a call each
		run := func(oneCall bool) ([]ConfirmResult, []Record, string) {
			a := mustCreate(t, s, openActivity(t, 10, 1, 1))
			var rids []string
			for _, u := range []string{"u1", "u2", "u3", "u4"} {
				res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
				if err != nil || res.Code != Reserved {
					t.Fatalf("reserve %s: %+v %v", u, res, err)
				}
				rids = append(rids, res.ReservationID)
			}
			if res, _, err := l.Fail(ctx, rids[2], ""); err != nil || res != FailedNow {
				t.Fatalf("fail %s: %v %v", rids[2], res, err)
			}
			k, n4, _ := ParseReservationID(rids[3])
			issuer := "fedcba9876543210"
			if ReservationID(a.ID, 0, 0, n4, issuer, 99) == rids[3] {
				issuer = "0123456789abcdef"
			}
			cs := []Confirmation{
				{ReservationID: rids[0], OrderID: 11},
				{ReservationID: rids[0], OrderID: 12},                                               // again in the same call
				{ReservationID: rids[1], OrderID: 13, UserHash: "00000000000000000000000000000000"}, // another buyer's
				{ReservationID: rids[2], OrderID: 14},                                               // failed
				{ReservationID: ReservationID(a.ID, 0, 0, 99, issuer, 1), OrderID: 15},              // no such record
				{ReservationID: ReservationID(a.ID, 0, 0, n4, issuer, 99), OrderID: 16},             // another id under its number
				{ReservationID: rids[1], OrderID: 17},
				{ReservationID: rids[1], OrderID: 18},
			}
			var got []ConfirmResult
			if oneCall {
				if got, err = l.Confirm(ctx, cs); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, c := range cs {
					res, err := l.Confirm(ctx, []Confirmation{c})
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, res...)
				}
			}
			var recs []Record
			for n := int64(1); n <= 4; n++ {
				r, found, err := ReadRecord(ctx, rdb, k, n)
				if err != nil || !found {
					t.Fatalf("record %d: %v %v", n, found, err)
				}
				r.ReservationID, r.TS = "", 0 // the activities' own
				recs = append(recs, r)
			}
			confirmed, err := rdb.HGet(ctx, k.Stats(), "confirmed").Result()
			if err != nil {
				t.Fatal(err)
			}
			return got, recs, confirmed
		}
		want := []ConfirmResult{Confirmed, AlreadyConfirmed, ConfirmOther, ConfirmConflict, ConfirmMissing, ConfirmOther, Confirmed, AlreadyConfirmed}
		codes1, recs1, conf1 := run(true)
		codesN, recsN, confN := run(false)
		if !slices.Equal(codes1, want) || !slices.Equal(codesN, want) {
			t.Fatalf("codes in one call %v, one call each %v; want %v", codes1, codesN, want)
		}
		if !slices.Equal(recs1, recsN) {
			t.Fatalf("records after one call:\n%+v\none call each:\n%+v", recs1, recsN)
		}
		if recs1[0].Status != "CONFIRMED" || recs1[0].OrderID != "11" || recs1[1].OrderID != "17" || recs1[2].Status != "FAILED" ||
			recs1[3].Status != "PENDING" || conf1 != "2" || confN != "2" {
			t.Fatalf("records %+v, stats confirmed %s and %s; want u1 confirmed with order 11, u2 with 17, u3 failed, u4 pending, 2 units",
				recs1, conf1, confN)
		}
	})
}
