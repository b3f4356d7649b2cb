package limiter

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// kernelStamps asks the kernel to timestamp every segment received on c (SO_TIMESTAMPNS), so
// that readStamped can tell when a reply reached this host rather than when a goroutine got a
// CPU to read it. A connection that is not a plain TCP connection (TLS) is left as it is.
func kernelStamps(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
}

// readStamped reads into b like c.Read and also returns the kernel's receive timestamp of the
// data read, or the zero Time when there is none (not a TCP connection, option not set).
func readStamped(c net.Conn, b []byte) (int, time.Time, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		n, err := c.Read(b)
		return n, time.Time{}, err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		n, err := c.Read(b)
		return n, time.Time{}, err
	}
	var (
		n, oobn int
		rerr    error
		oob     [64]byte
	)
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), b, oob[:], 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	if n == 0 {
		return 0, time.Time{}, net.ErrClosed
	}
	msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
	if perr != nil {
		return n, time.Time{}, nil
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS &&
			len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			return n, time.Unix(ts.Unix()), nil
		}
	}
	return n, time.Time{}, nil
}
