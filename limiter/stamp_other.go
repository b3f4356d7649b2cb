//go:build !linux

package limiter

import (
	"net"
	"time"
)

// kernelStamps does nothing off Linux: replies are timed when read.
func kernelStamps(net.Conn) {}

// readStamped is c.Read; off Linux there is no kernel receive timestamp.
func readStamped(c net.Conn, b []byte) (int, time.Time, error) {
	n, err := c.Read(b)
	return n, time.Time{}, err
}
