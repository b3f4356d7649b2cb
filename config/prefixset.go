package config

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// prefixSet answers whether an address lies in any prefix of a list, in O(log n) whatever
// the list's length: the prefixes of each family as sorted, disjoint ranges of addresses,
// found by binary search. The lists it serves (trusted proxies, the admin allow-list, the
// blacklist) are matched on every request, several times for a forwarded chain, and a
// configuration may name tens of thousands of prefixes. IPv4 and IPv6 are kept apart as
// netip.Prefix.Contains keeps them: an IPv6 prefix never holds an IPv4 address.
type prefixSet struct {
	v4, v6 []addrRange
}

// u128 is an address as a 128-bit number (an IPv4 address in the low 32 bits).
type u128 struct{ hi, lo uint64 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// addrRange is first..last, both included.
type addrRange struct{ first, last u128 }

func addrNum(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

// prefixRange is the range of the masked prefix p.
func prefixRange(p netip.Prefix) addrRange {
	first := addrNum(p.Addr())
	host := p.Addr().BitLen() - p.Bits() // bits of the host part
	var mask u128
	switch {
	case host >= 128:
		mask = u128{hi: ^uint64(0), lo: ^uint64(0)}
	case host > 64:
		mask = u128{hi: ^uint64(0) >> (128 - host), lo: ^uint64(0)}
	default: // host 0..64; a shift by 64 is 0
		mask = u128{lo: ^uint64(0) >> (64 - host)}
	}
	return addrRange{first: first, last: u128{hi: first.hi | mask.hi, lo: first.lo | mask.lo}}
}

// newPrefixSet builds the set of ps (each masked and zone-free, as parsePrefix returns them).
func newPrefixSet(ps []netip.Prefix) prefixSet {
	var s prefixSet
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		if p.Addr().Is4() {
			s.v4 = append(s.v4, prefixRange(p))
		} else {
			s.v6 = append(s.v6, prefixRange(p))
		}
	}
	s.v4, s.v6 = mergeRanges(s.v4), mergeRanges(s.v6)
	return s
}

// mergeRanges sorts rs and folds the ones that overlap (prefixes overlap only by nesting),
// so the result is sorted and disjoint.
func mergeRanges(rs []addrRange) []addrRange {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b addrRange) int { return a.first.cmp(b.first) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.first.cmp(last.last) <= 0 {
			if r.last.cmp(last.last) > 0 {
				last.last = r.last
			}
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// empty reports whether the set holds no prefix.
func (s prefixSet) empty() bool { return len(s.v4) == 0 && len(s.v6) == 0 }

// contains reports whether a lies in a prefix of the set; an invalid or zoned address is in
// none, as with netip.Prefix.Contains.
func (s prefixSet) contains(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	rs := s.v6
	if a.Is4() {
		rs = s.v4
	}
	n := addrNum(a)
	// lo ends at the first range that starts past n: only the one before it can hold n.
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].first.cmp(n) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo > 0 && n.cmp(rs[lo-1].last) <= 0
}
