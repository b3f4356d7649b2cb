package app

import (
	"strconv"
	"testing"
)

func TestHLLSketchEstimate(t *testing.T) {
	for _, n := range []int{0, 1, 100, 5_000, 200_000} {
		var s hllSketch
		for i := 0; i < n; i++ {
			s.add(userHash64("user-" + strconv.Itoa(i)))
			s.add(userHash64("user-" + strconv.Itoa(i))) // twice: counted once
		}
		got := float64(s.count())
		// 4 standard errors of Redis's HyperLogLog (1.04/sqrt(16384) = 0.81 %), and 1 user
		// at the smallest counts.
		if d := got - float64(n); d*d > (0.0325*float64(n))*(0.0325*float64(n))+1 {
			t.Errorf("n=%d: estimate %.0f", n, got)
		}
	}
}

func TestHLLSketchAddAllocatesNothing(t *testing.T) {
	var s hllSketch
	users := make([]string, 1000)
	for i := range users {
		users[i] = "u" + strconv.Itoa(i)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() { s.add(userHash64(users[i%len(users)])); i++ }); n != 0 {
		t.Fatalf("add allocates %.1f times", n)
	}
}

func TestHLLDenseLayout(t *testing.T) {
	var s hllSketch
	for i := 0; i < hllRegisters; i++ {
		s.reg[i] = uint8(i % 52) // every value a register can hold
	}
	s.dirty = true
	b := s.dense(nil)
	if len(b) != hllDenseSize || string(b[:4]) != "HYLL" || b[4] != 0 || b[15]&0x80 == 0 || s.dirty {
		t.Fatalf("header %q, len %d, dirty %v", b[:16], len(b), s.dirty)
	}
	regs := b[hllHeader:]
	for i := 0; i < hllRegisters; i++ {
		// Redis's HLL_DENSE_GET_REGISTER.
		by, fb := i*6/8, uint(i*6&7)
		b0 := uint(regs[by])
		var b1 uint
		if by+1 < len(regs) {
			b1 = uint(regs[by+1])
		}
		if got := uint8(((b0 >> fb) | (b1 << (8 - fb))) & 63); got != s.reg[i] {
			t.Fatalf("register %d reads %d, want %d", i, got, s.reg[i])
		}
	}
}
