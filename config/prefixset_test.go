package config

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// linearContains is what prefixSet replaces: a scan of the list.
func linearContains(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// edges are the addresses where a prefix set can be wrong: each prefix's first and last
// address and their neighbours, in both families.
func edges(ps []netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, p := range ps {
		r := prefixRange(p)
		first := p.Addr()
		last := numAddr(r.last, first.Is4())
		out = append(out, first, last, first.Prev(), first.Next(), last.Prev(), last.Next())
	}
	return append(out, netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("255.255.255.255"),
		netip.MustParseAddr("::"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
		netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("fe80::1%eth0"))
}

func numAddr(n u128, v4 bool) netip.Addr {
	if v4 {
		return netip.AddrFrom4([4]byte{byte(n.lo >> 24), byte(n.lo >> 16), byte(n.lo >> 8), byte(n.lo)})
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(n.hi >> (56 - 8*i))
		b[8+i] = byte(n.lo >> (56 - 8*i))
	}
	return netip.AddrFrom16(b)
}

func checkSet(t *testing.T, ps []netip.Prefix) {
	t.Helper()
	s := newPrefixSet(ps)
	for _, a := range edges(ps) {
		if !a.IsValid() {
			continue
		}
		if got, want := s.contains(a), linearContains(ps, a); got != want {
			t.Fatalf("%s in %v: %v, want %v", a, ps, got, want)
		}
	}
}

// TestPrefixSetAgreesWithALinearScan: the prefix set answers as netip.Prefix.Contains over
// the whole list, for nested, adjacent, overlapping and disjoint prefixes of both families,
// every length from /0 to a single address, at every edge of every prefix.
func TestPrefixSetAgreesWithALinearScan(t *testing.T) {
	fixed := []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.3/32", "0.0.0.0/0", "::/0", "2001:db8::/32",
		"2001:db8:0:1::/64", "::ffff:0:0/96", "192.0.2.0/25", "192.0.2.128/25", "ffff::/16", "::1/128",
		"8000::/1", "0.0.0.0/1", "128.0.0.0/1", "2001:db8::/63", "2001:db8::/65"}
	var ps []netip.Prefix
	for _, s := range fixed {
		ps = append(ps, netip.MustParsePrefix(s).Masked())
	}
	for i := range ps { // every sub-list of a sliding window, so an absent /0 is tested too
		for j := i; j <= len(ps); j++ {
			checkSet(t, ps[i:j])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var rs []netip.Prefix
		for range 1 + rng.IntN(40) {
			var a netip.Addr
			if rng.IntN(2) == 0 {
				a = netip.AddrFrom4([4]byte{byte(rng.IntN(4)), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())})
			} else {
				var b [16]byte
				b[0] = byte(rng.IntN(4))
				for k := 1; k < 16; k++ {
					b[k] = byte(rng.Uint32())
				}
				a = netip.AddrFrom16(b)
			}
			// Lengths near the top, so that random prefixes nest and touch often.
			bits := a.BitLen() - rng.IntN(a.BitLen()/2+1)
			if rng.IntN(8) == 0 {
				bits = rng.IntN(a.BitLen() + 1)
			}
			rs = append(rs, netip.PrefixFrom(a, bits).Masked())
		}
		checkSet(t, rs)
	}
	if s := newPrefixSet(nil); !s.empty() || s.contains(netip.MustParseAddr("10.0.0.1")) {
		t.Fatal("an empty set holds an address")
	}
}

// TestIndexedListsMatchAsListed: the blacklist, trusted proxies and admin allow-list of a
// decoded configuration answer as their lists read (single addresses, prefixes, an IPv4
// address written in IPv6), and a mapped or zoned address as its plain form.
func TestIndexedListsMatchAsListed(t *testing.T) {
	c, err := Decode([]byte(`
blacklist: {ips: [203.0.113.7, "2001:db8:bad::/48", "::ffff:198.51.100.0/120"]}
trustedProxies: [10.0.0.0/8, "fd00::1"]
admin: {allowFrom: [127.0.0.1, "::1"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr                      string
		blocked, trusted, allowed bool
	}{
		{"203.0.113.7", true, false, false},
		{"203.0.113.8", false, false, false},
		{"::ffff:203.0.113.7", true, false, false},
		{"2001:db8:bad:ffff::1", true, false, false},
		{"2001:db8:bae::", false, false, false},
		{"198.51.100.255", true, false, false},
		{"198.51.101.0", false, false, false},
		{"10.255.255.255", false, true, false},
		{"11.0.0.0", false, false, false},
		{"fd00::1", false, true, false},
		{"fd00::1%eth0", false, true, false},
		{"fd00::2", false, false, false},
		{"127.0.0.1", false, false, true},
		{"::1", false, false, true},
	} {
		a := netip.MustParseAddr(tt.addr)
		if got := c.BlockedAddr(a); got != tt.blocked {
			t.Errorf("BlockedAddr(%s) = %v", a, got)
		}
		if got := c.TrustedProxy(a); got != tt.trusted {
			t.Errorf("TrustedProxy(%s) = %v", a, got)
		}
		if got := c.AdminAllowed(a); got != tt.allowed {
			t.Errorf("AdminAllowed(%s) = %v", a, got)
		}
	}
	if !Default().AdminAllowed(netip.MustParseAddr("192.0.2.1")) {
		t.Error("an empty allow-list refuses an address")
	}
}
