package config

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// Child-process mode: TestMain runs one NacosSource+Reloader pair and prints
// "applied <version> <unix nanos>" for every applied snapshot, until stdin closes. The
// propagation test starts three of them, as three service instances would be.
const childEnv = "SECKILL_CONFIG_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	var mu sync.Mutex
	r := NewReloader(func(c *Config, meta Meta) (*Config, error) {
		mu.Lock()
		fmt.Printf("applied %s %d\n", meta.Version, time.Now().UnixNano())
		mu.Unlock()
		return c, nil
	}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	go r.Run(ctx)
	src := &NacosSource{Addr: os.Getenv("CHILD_ADDR"), DataID: os.Getenv("CHILD_DATA_ID"),
		CacheDir: os.Getenv("CHILD_CACHE_DIR"), Username: testsvc.NacosUsername, Password: testsvc.NacosPassword}
	if err := src.Run(ctx, r.Offer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// nacosAPIs holds one logged-in Open API client per server address.
var nacosAPIs sync.Map

// api returns the Open API client of the server at addr, logged in as the test
// administrator (the shared server and the private ones share its password).
func api(addr string) *testsvc.NacosAPI {
	a, _ := nacosAPIs.LoadOrStore(addr, &testsvc.NacosAPI{Addr: addr,
		Username: testsvc.NacosUsername, Password: testsvc.NacosPassword})
	return a.(*testsvc.NacosAPI)
}

// publish stores content under dataID in the public namespace the way the console does.
func publish(t testing.TB, addr, dataID, content string) {
	t.Helper()
	api(addr).Publish(t, "", dataID, DefaultGroup, content)
}

// authed sets the test administrator's credentials on src (the test servers run with auth).
func authed(src *NacosSource) *NacosSource {
	src.Username, src.Password = testsvc.NacosUsername, testsvc.NacosPassword
	return src
}

func uniqueDataID(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("cfgtest-%s-%d.yaml", name, time.Now().UnixNano())
}

// startNacosPair runs a NacosSource feeding a Reloader until the test ends.
func startNacosPair(t *testing.T, src *NacosSource) *Reloader[snap] {
	t.Helper()
	if src.CacheDir == "" {
		src.CacheDir = t.TempDir()
	}
	r := startReloader(t, buildSnap, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx, r.Offer) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("NacosSource.Run: %v", err)
		}
	})
	return r
}

func waitReady[T any](t *testing.T, r *Reloader[T], d time.Duration) {
	t.Helper()
	select {
	case <-r.Ready():
	case <-time.After(d):
		t.Fatalf("not ready after %v (status %+v)", d, r.Status())
	}
}

func TestNacosUnreachableStart(t *testing.T) {
	const wrongAddr = "127.0.0.1:1" // nothing listens on 1 or 1001
	doc := "limits: {user: {rate: 7, burst: 7}}\n"

	t.Run("with snapshot", func(t *testing.T) {
		snapPath := filepath.Join(t.TempDir(), "seckill.yaml")
		if err := os.WriteFile(snapPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := startNacosPair(t, authed(&NacosSource{Addr: wrongAddr, DataID: uniqueDataID(t), LocalSnapshotPath: snapPath}))
		waitReady(t, r, 15*time.Second)
		t.Logf("ready from the cache after %v", time.Since(start))
		if st := r.Status(); st.Source != SourceCache || st.Version != versionOf(t, doc) || r.Current().userRate != 7 {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("without snapshot", func(t *testing.T) {
		r := startNacosPair(t, authed(&NacosSource{Addr: wrongAddr, DataID: uniqueDataID(t),
			LocalSnapshotPath: filepath.Join(t.TempDir(), "none.yaml")}))
		testwait.Never(t, 3*time.Second, func() bool {
			select {
			case <-r.Ready():
				return true
			default:
				return false
			}
		}, "ready without nacos and without a snapshot: %v", testwait.Lazy(func() string { return fmt.Sprintf("%+v", r.Status()) }))
		if r.Current() != nil {
			t.Fatal("a snapshot appeared")
		}
	})
}

// childEvent is one "applied" line of a child instance.
type childEvent struct {
	child   int
	version string
	at      time.Time
}

// startChild runs this test binary as one service instance (see TestMain) and sends its
// applied snapshots to events. When the test ends the child is stopped and its stderr is
// checked: a data race whose conflicting accesses are all inside nacos-sdk-go (a known race
// of v2.3.2's RpcClient on reconnect) is logged; any other race fails the test.
func startChild(t *testing.T, n int, addr, dataID string, events chan<- childEvent) {
	t.Helper()
	var stderr syncbuf.Buffer
	t.Cleanup(func() { checkChildRaces(t, n, stderr.String()) }) // after the child stopped: cleanups run last first
	_, stdout := testsvc.Child(t, []string{childEnv + "=1", "CHILD_ADDR=" + addr, "CHILD_DATA_ID=" + dataID,
		"CHILD_CACHE_DIR=" + t.TempDir()}, &stderr, "-test.run=^$")
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "applied" {
				continue
			}
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			events <- childEvent{child: n, version: f[1], at: time.Unix(0, ns)}
		}
	}()
}

func checkChildRaces(t *testing.T, n int, stderr string) {
	t.Helper()
	reports := strings.Split(stderr, "WARNING: DATA RACE")
	for _, rep := range reports[1:] {
		if i := strings.Index(rep, "=================="); i >= 0 {
			rep = rep[:i]
		}
		if raceTopFrameOurs(rep) {
			t.Errorf("child %d: data race in our code:\n%s", n, rep)
			continue
		}
		t.Logf("child %d: data race inside nacos-sdk-go v2.3.2 (both accesses in the library):\n%s", n, firstLines(rep, 8))
	}
	if len(reports) == 1 && strings.TrimSpace(stderr) != "" {
		t.Logf("child %d stderr:\n%s", n, firstLines(stderr, 20))
	}
}

// raceTopFrameOurs reports whether the innermost frame of either conflicting access of a
// race report is in this module.
func raceTopFrameOurs(rep string) bool {
	lines := strings.Split(rep, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if (strings.HasPrefix(l, "Read at") || strings.HasPrefix(l, "Write at") ||
			strings.HasPrefix(l, "Previous read at") || strings.HasPrefix(l, "Previous write at")) &&
			i+1 < len(lines) && strings.Contains(lines[i+1], "github.com/seckill/seckill") {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
