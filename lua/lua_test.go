package lua

import (
	"strings"
	"testing"
)

func TestEveryScriptLoadsAndIncludesExpand(t *testing.T) {
	for _, n := range Names() {
		src, err := Source(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if strings.Contains(src, "--#include") {
			t.Errorf("%s: include left unexpanded", n)
		}
		if !strings.HasPrefix(src, "--") {
			t.Errorf("%s: must open with a comment giving KEYS, ARGV and return codes", n)
		}
	}
}

func TestMissingScriptIsAnError(t *testing.T) {
	if _, err := Load("nope.lua"); err == nil {
		t.Fatal("want an error for a missing script")
	}
}

func TestDecodeRefusesUnknownCodes(t *testing.T) {
	type answer int
	const (
		unknown answer = iota
		one
		two
	)
	if got, err := Decode("x.lua", 2, one, two); err != nil || got != two {
		t.Errorf("Decode(2) = %v, %v", got, err)
	}
	for _, v := range []int64{0, 3, -1} {
		if got, err := Decode("x.lua", v, one, two); err == nil || got != unknown {
			t.Errorf("Decode(%d) = %v, %v; want unknown and an error", v, got, err)
		}
	}
}
