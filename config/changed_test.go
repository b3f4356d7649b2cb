package config

import (
	"testing"
	"time"
)

// TestReloaderChangedFollowsEverySwap: the channel from Changed is closed by the next stored
// snapshot and by nothing else (a refused payload, or the running content again, leave it
// open), and a follower that takes Changed before Current sees the new snapshot.
func TestReloaderChangedFollowsEverySwap(t *testing.T) {
	r := startReloader(t, buildSnap, nil)
	ch := r.Changed()
	if r.Current() != nil {
		t.Fatal("snapshot before any payload")
	}
	good := "limits: {user: {rate: 1, burst: 1}}"
	r.Offer(Payload{Data: []byte(good), Source: SourceFile, Seq: 1})
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed not closed within 5 s of the first payload")
	}
	first := r.Current()
	if first == nil || first.userRate != 1 {
		t.Fatalf("current after the first change = %+v", first)
	}

	ch = r.Changed()
	applied := make(chan struct{}, 2)
	r.Offer(Payload{Data: []byte("limits: {usr: {}}"), Source: SourceFile, Seq: 2}) // refused
	r.Offer(Payload{Data: []byte(good), Source: SourceFile, Seq: 3, Applied: func() { applied <- struct{}{} }})
	select {
	case <-applied:
	case <-time.After(5 * time.Second):
		t.Fatal("the running content again was not processed within 5 s")
	}
	select {
	case <-ch:
		t.Fatal("Changed closed without a new snapshot")
	default:
	}

	r.Offer(Payload{Data: []byte("limits: {user: {rate: 2, burst: 2}}"), Source: SourceFile, Seq: 4})
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed not closed within 5 s of the second snapshot")
	}
	if s := r.Current(); s == first || s.userRate != 2 {
		t.Fatalf("current after the second change = %+v", s)
	}
	if r.Changed() == ch {
		t.Fatal("Changed returns the closed channel again")
	}
}
