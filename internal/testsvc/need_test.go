package testsvc

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// fatalTB records a Fatalf and stops the call with a panic that the test recovers.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// TestNeedFollowsTheBuildTag: without -tags integration Need refuses even an address that
// accepts connections (a server test in an untagged file fails at once, servers up or not);
// with the tag it accepts it.
func TestNeedFollowsTheBuildTag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != f {
				panic(p)
			}
		}()
		Need(f, "a listener", ln.Addr().String())
	}()
	switch {
	case Integration && f.msg != "":
		t.Fatalf("built with -tags integration, Need refused a listening address: %s", f.msg)
	case !Integration && !strings.Contains(f.msg, "//go:build integration"):
		t.Fatalf("built without -tags integration, Need said %q", f.msg)
	}
}
