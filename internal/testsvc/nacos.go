package testsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The Nacos test server of scripts/services.sh runs with auth on; these are its
// administrator's credentials and its console address.
var (
	NacosConsoleAddr = env("SECKILL_TEST_NACOS_CONSOLE", "127.0.0.1:18080")
	NacosUsername    = env("SECKILL_TEST_NACOS_USERNAME", "nacos")
	NacosPassword    = env("SECKILL_TEST_NACOS_PASSWORD", "seckill-nacos")
)

// NacosAPI is an Open API client of one Nacos server, logged in as one user.
type NacosAPI struct {
	Addr     string // "host:port" of the HTTP port (context path /nacos)
	Username string
	Password string

	mu      sync.Mutex // guards token and renewAt
	token   string
	renewAt time.Time
}

// NacosAdmin returns an Open API client of the shared test server, logged in as its
// administrator, after checking the server is reachable.
func NacosAdmin(t testing.TB) *NacosAPI {
	t.Helper()
	Need(t, "nacos", NacosAddr)
	n := &NacosAPI{Addr: NacosAddr, Username: NacosUsername, Password: NacosPassword}
	if _, err := n.Token(); err != nil {
		t.Fatalf("nacos at %s: %v (scripts/services.sh creates the user %s)", NacosAddr, err, NacosUsername)
	}
	return n
}

// Token returns an access token, logging in when there is none or it is about to expire.
func (n *NacosAPI) Token() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.token != "" && time.Now().Before(n.renewAt) {
		return n.token, nil
	}
	status, body, err := n.do(http.MethodPost, "/nacos/v1/auth/users/login", nil,
		url.Values{"username": {n.Username}, "password": {n.Password}})
	if err != nil {
		return "", err
	}
	var out struct {
		AccessToken string `json:"accessToken"`
		TokenTTL    int64  `json:"tokenTtl"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.AccessToken == "" {
		return "", fmt.Errorf("login as %s: HTTP %d %s", n.Username, status, body)
	}
	n.token = out.AccessToken
	n.renewAt = time.Now().Add(time.Duration(out.TokenTTL) * time.Second / 2)
	return n.token, nil
}

// do sends one request with query q (and form, if not nil) and returns status and body.
func (n *NacosAPI) do(method, path string, q, form url.Values) (int, string, error) {
	u := "http://" + n.Addr + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// authed sends a request with the access token added to the query.
func (n *NacosAPI) authed(method, path string, q, form url.Values) (int, string, error) {
	tok, err := n.Token()
	if err != nil {
		return 0, "", err
	}
	if q == nil {
		q = url.Values{}
	}
	q.Set("accessToken", tok)
	return n.do(method, path, q, form)
}

// Publish stores content under dataID in group of namespace ("" public) the way the console
// does (POST /nacos/v1/cs/configs, form-encoded, type yaml) and fails the test unless the
// server acknowledges it.
func (n *NacosAPI) Publish(t testing.TB, namespace, dataID, group, content string) {
	t.Helper()
	form := url.Values{"dataId": {dataID}, "group": {group}, "content": {content}, "type": {"yaml"}}
	if namespace != "" {
		form.Set("tenant", namespace)
	}
	status, body, err := n.authed(http.MethodPost, "/nacos/v1/cs/configs", nil, form)
	if err != nil || status != http.StatusOK || strings.TrimSpace(body) != "true" {
		t.Fatalf("nacos publish %s/%s: HTTP %d %q %v", group, dataID, status, body, err)
	}
}

// Get reads a config through the Open API; found is false when the server has none. The
// Java server serves reads from a cache refreshed ~100 ms after a publish: use WaitContent
// to read a write back.
func (n *NacosAPI) Get(namespace, dataID, group string) (content string, found bool, err error) {
	q := url.Values{"dataId": {dataID}, "group": {group}}
	if namespace != "" {
		q.Set("tenant", namespace)
	}
	status, body, err := n.authed(http.MethodGet, "/nacos/v1/cs/configs", q, nil)
	switch {
	case err != nil:
		return "", false, err
	case status == http.StatusNotFound:
		return "", false, nil
	case status != http.StatusOK:
		return "", false, fmt.Errorf("nacos get %s/%s: HTTP %d %s", group, dataID, status, body)
	}
	return body, true, nil
}

// WaitContent polls until the Open API returns content for dataID, for up to d.
func (n *NacosAPI) WaitContent(t testing.TB, namespace, dataID, group, content string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, _, err := n.Get(namespace, dataID, group)
		if err == nil && got == content {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nacos %s/%s not readable as %q within %v (got %q, %v)", group, dataID, content, d, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Delete removes a config; used in cleanups, so it only logs failures.
func (n *NacosAPI) Delete(t testing.TB, namespace, dataID, group string) {
	t.Helper()
	q := url.Values{"dataId": {dataID}, "group": {group}}
	if namespace != "" {
		q.Set("tenant", namespace)
	}
	if status, body, err := n.authed(http.MethodDelete, "/nacos/v1/cs/configs", q, nil); err != nil || status != http.StatusOK {
		t.Logf("nacos delete %s/%s: HTTP %d %s %v", group, dataID, status, body, err)
	}
}

// CreateNamespace creates a namespace (id and name id) so that the console lists it, and
// deletes it when the test ends. Configs and instances need no namespace created first.
func (n *NacosAPI) CreateNamespace(t testing.TB, id string) {
	t.Helper()
	status, body, err := n.authed(http.MethodPost, "/nacos/v3/admin/core/namespace", nil,
		url.Values{"namespaceId": {id}, "namespaceName": {id}, "namespaceDesc": {"seckill test " + t.Name()}})
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"data":true`) {
		t.Fatalf("nacos create namespace %s: HTTP %d %s %v", id, status, body, err)
	}
	t.Cleanup(func() {
		if status, body, err := n.authed(http.MethodDelete, "/nacos/v3/admin/core/namespace",
			url.Values{"namespaceId": {id}}, nil); err != nil || status != http.StatusOK {
			t.Logf("nacos delete namespace %s: HTTP %d %s %v", id, status, body, err)
		}
	})
}

// NacosInstance is one instance of a service as the naming Open API lists it.
type NacosInstance struct {
	IP       string            `json:"ip"`
	Port     int               `json:"port"`
	Healthy  bool              `json:"healthy"`
	Enabled  bool              `json:"enabled"`
	Metadata map[string]string `json:"metadata"`
}

// Instances lists the instances of service in group of namespace ("" public).
func (n *NacosAPI) Instances(namespace, service, group string) ([]NacosInstance, error) {
	q := url.Values{"serviceName": {service}, "groupName": {group}}
	if namespace != "" {
		q.Set("namespaceId", namespace)
	}
	status, body, err := n.authed(http.MethodGet, "/nacos/v1/ns/instance/list", q, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("nacos instance list: HTTP %d %s", status, body)
	}
	var out struct {
		Hosts []NacosInstance `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		return nil, fmt.Errorf("nacos instance list: %w in %q", err, body)
	}
	return out.Hosts, nil
}

// NacosServer is a private Java Nacos server a test started (see StartNacos).
type NacosServer struct {
	Addr        string // HTTP "127.0.0.1:port"; gRPC on port+1000 and port+1001
	ConsoleAddr string
	Dir         string // data, configuration and logs
	Admin       *NacosAPI

	t       testing.TB
	port    int
	console int
	cmd     *exec.Cmd
	done    chan struct{}
}

// repoRoot finds the repository root: the nearest directory above the working directory
// (go test runs a test in its package's directory) holding go.mod, or else this source
// file's location (which -trimpath turns into an import path).
func repoRoot() string {
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// freeNacosPorts returns a main port p such that p-1000 (raft), p, p+1000, p+1001 (gRPC) and
// a console port p+2000 are free on loopback. All five lie below Linux's ephemeral range
// (32768 up): a port taken from that range is free when checked but can be the local end of
// any outgoing connection a moment later, and Restart binds the same ports again (a private
// server once failed its restart with "Failed to bind to address 127.0.0.1:<p+1001>").
func freeNacosPorts(t testing.TB) (int, int) {
	t.Helper()
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	seed := int(time.Now().UnixNano() % 4000)
	for i := range 400 {
		p := 13000 + (seed+i*13)%4000 // p-1000 >= 12000, p+2000 < 19000
		if free(p) && free(p-1000) && free(p+1000) && free(p+1001) && free(p+2000) {
			return p, p + 2000
		}
	}
	t.Fatal("no free port set for a private nacos")
	return 0, 0
}

// StartNacos starts a private Java Nacos server (the jars and launcher of
// scripts/services.sh, auth on, the same administrator password) with its data in dir, on
// free ports, and waits until it accepts logins. The test's cleanup stops it. Start it again
// on the same dir with Restart after Stop. It takes 10-40 s on two busy cores.
func StartNacos(t testing.TB, dir string) *NacosServer {
	t.Helper()
	s, ready := LaunchNacos(t, dir)
	ready()
	return s
}

// LaunchNacos is StartNacos without the wait: the server boots in the background and ready
// waits for it (failing the test if the boot failed). A test may call t.Parallel between the
// two, so that the boot overlaps the package's sequential tests.
func LaunchNacos(t testing.TB, dir string) (s *NacosServer, ready func()) {
	t.Helper()
	needIntegration(t, "a private nacos")
	if testing.Short() {
		t.Skip("-short: no private nacos")
	}
	port, console := freeNacosPorts(t)
	s = &NacosServer{t: t, Dir: dir, port: port, console: console,
		Addr: "127.0.0.1:" + strconv.Itoa(port), ConsoleAddr: "127.0.0.1:" + strconv.Itoa(console)}
	s.Admin = &NacosAPI{Addr: s.Addr, Username: NacosUsername, Password: NacosPassword}
	// The cleanup waits for the boot first, so Stop sees the process it started.
	return s, Boot(t, s.boot, s.Stop)
}

// Restart starts the server (again) on its ports and dir and waits until it is usable.
func (s *NacosServer) Restart() {
	s.t.Helper()
	if err := s.boot(); err != nil {
		s.t.Fatal(err)
	}
}

// boot starts the server on its ports and dir and waits until it accepts logins. It does
// not touch s.t but to log (LaunchNacos runs it in a goroutine of its own).
func (s *NacosServer) boot() error {
	out, err := os.OpenFile(filepath.Join(s.Dir, "nacos.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "services.sh"), "nacos-server",
		s.Dir, strconv.Itoa(s.port), strconv.Itoa(s.console))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "SECKILL_NACOS_ADMIN_PASSWORD="+NacosPassword)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for !s.ready() {
		select {
		case <-s.done:
			return fmt.Errorf("private nacos exited during start-up:\n%s", Tail(filepath.Join(s.Dir, "nacos.out"), 40))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private nacos not ready in 3 min:\n%s", Tail(filepath.Join(s.Dir, "nacos.out"), 40))
		}
		time.Sleep(250 * time.Millisecond)
	}
	// An empty data dir has no user: set the administrator's password (409 once set). The
	// login works once the server's user cache refreshed, a few seconds later.
	form := url.Values{"password": {NacosPassword}}
	if resp, err := http.PostForm("http://"+s.ConsoleAddr+"/v3/auth/user/admin", form); err == nil {
		resp.Body.Close()
	}
	s.Admin.mu.Lock()
	s.Admin.token = ""
	s.Admin.mu.Unlock()
	for {
		if _, err = s.Admin.Token(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private nacos: no login in 3 min: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s.t.Logf("private nacos on %s (console %s) usable %v after the JVM start", s.Addr, s.ConsoleAddr, time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (s *NacosServer) ready() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + s.ConsoleAddr + "/v3/console/health/readiness")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	g, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port+1000), time.Second)
	if err != nil {
		return false
	}
	g.Close()
	return true
}

// Stop stops the server with SIGTERM (SIGKILL after 30 s) and waits for it. Safe to call
// when it is not running.
func (s *NacosServer) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Tail is the last n lines of the file at path (its read error's text when it cannot be
// read): what a test shows of a server's log.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errNoChromium is returned by Chromium when no browser binary is found.
var errNoChromium = errors.New("chromium not found (scripts/services.sh installs Debian's chromium)")

// Chromium returns the path of the Chromium binary the browser tests drive
// ($SECKILL_TEST_CHROMIUM, else chromium on PATH).
func Chromium() (string, error) {
	if p := os.Getenv("SECKILL_TEST_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errNoChromium
}
