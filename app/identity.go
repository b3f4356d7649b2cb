package app

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/keyspace"
)

// maxForwardedHops bounds the X-Forwarded-For entries read from the right: past it the
// last one read stands for the client (no real chain of trusted proxies is that long).
const maxForwardedHops = 16

// connAddr is the address of the request's connection, zone stripped; invalid when the
// remote address cannot be parsed.
func connAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap().WithZone("")
}

// clientIP is the connection's address, or the first untrusted address of X-Forwarded-For
// (every line of it, in order, read right to left) when the connection comes from a trusted
// proxy. Zones are stripped: fe80::1%eth0 and fe80::1 are one client.
func clientIP(c *gin.Context, cfg *config.Config) netip.Addr {
	addr := connAddr(c.Request)
	if !addr.IsValid() || !cfg.TrustedProxy(addr) {
		return addr
	}
	// A proxy may append its own line rather than extend the first: the client's forged
	// value is then the first line and the proxy's view the last. The lines are read from
	// the last, each from its end, and never split whole: a chain of any length costs at
	// most maxForwardedHops parses and lookups, and allocates nothing.
	lines := c.Request.Header.Values("X-Forwarded-For")
	read := 0
	for l := len(lines) - 1; l >= 0; l-- {
		line := lines[l]
		for {
			if read == maxForwardedHops {
				return addr
			}
			read++
			hop := line
			i := strings.LastIndexByte(line, ',')
			if i >= 0 {
				hop = line[i+1:]
			}
			h, err := netip.ParseAddr(strings.TrimSpace(hop))
			if err != nil {
				return addr
			}
			h = h.Unmap().WithZone("")
			if !cfg.TrustedProxy(h) {
				return h
			}
			addr = h
			if i < 0 {
				break
			}
			line = line[:i]
		}
	}
	return addr
}

var msgBadUserID = "X-User-Id must be 1 to " + strconv.Itoa(keyspace.MaxUserID) +
	" bytes of printable UTF-8, without leading or trailing whitespace"

// identity returns the user of a storefront request.
func identity(c *gin.Context, s *Snapshot) (string, *apiError) {
	if s.auth.mode == config.AuthJWT {
		if len(c.Request.Header.Values("Authorization")) > 1 {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "exactly one Authorization header is allowed")
		}
		h := c.GetHeader("Authorization")
		tok, ok := bearerToken(h)
		if !ok {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "a bearer token is required")
		}
		sub, ok := s.auth.verify(tok)
		if !ok {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "invalid or expired token")
		}
		return sub, nil
	}
	if len(c.Request.Header.Values("X-User-Id")) > 1 {
		// A gateway that appends instead of replacing would let the client choose the user.
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "exactly one X-User-Id header is allowed")
	}
	u := c.GetHeader("X-User-Id")
	if u == "" {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "X-User-Id is required")
	}
	if !config.ValidUserID(u) {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, msgBadUserID)
	}
	return u, nil
}
