package config

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/util"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
	"golang.org/x/time/rate"
)

// Nacos defaults.
const (
	DefaultDataID = "seckill.yaml"
	DefaultGroup  = "SECKILL"
	// DefaultPollEvery is how often NacosSource re-reads the content besides the push
	// listener, so that an edit is seen within seconds even when the client library's push
	// stream is dead (e.g. after a Nacos restart).
	DefaultPollEvery = 2 * time.Second
)

// nacosClientMu serializes the creation of nacos-sdk-go clients in this process: the library
// initialises package state (util.LocalIP's cache, its logger) without synchronization, so
// two clients created at once (the config source and the registry) race. It guards the
// library's globals, not state of ours.
var nacosClientMu sync.Mutex

// lockNacosClients takes nacosClientMu, first filling the library's lazily cached local IP
// (util.LocalIP writes a package variable unsynchronised on first use, and every gRPC request
// reads it): once it is set before any client runs, later calls only read it.
func lockNacosClients() {
	nacosClientMu.Lock()
	nacosLocalIP.Do(func() { util.LocalIP() })
}

var nacosLocalIP sync.Once

// startupFastPoll is how long after start NacosSource polls faster while the library has not
// subscribed yet.
const startupFastPoll = 6 * time.Second

// NacosSource offers the configuration stored in Nacos (nacos-sdk-go/v2 config client).
//
// A change notification only wakes one worker goroutine, which fetches the content with
// GetConfig and offers it with an increasing Seq; the library runs its listeners in
// unordered goroutines, so their content is never used directly. The worker also polls every
// PollEvery. All fetches go through a limiter below the library's per-key query limit
// (5 per second).
//
// Each fetched content the Reloader built and applied (never a refused one) is written
// atomically to LocalSnapshotPath. When Nacos cannot be reached at start, that snapshot is
// offered with Source "cache" and Nacos keeps being tried in the background; without a
// snapshot nothing is offered, so the service stays not ready.
//
// Content missing on the server (never published, or deleted) never replaces what has been
// offered: the current configuration stays. If nothing has been offered yet, the local
// snapshot is offered if there is one ("cache"), else an empty document, which the Reloader
// refuses: a fresh deployment without a published config stays not ready (fails closed)
// instead of running on the defaults.
type NacosSource struct {
	Addr              string        // "host:port" of the Nacos HTTP port; gRPC is port+1000
	DataID            string        // default DefaultDataID
	Group             string        // default DefaultGroup
	Namespace         string        // namespace id; "" is the public namespace (not "public")
	Username          string        // "" when the server runs without auth
	Password          string        // Username's password
	CacheDir          string        // the SDK's cache and log directory; default a temp dir
	LocalSnapshotPath string        // last good content; "" disables the snapshot
	PollEvery         time.Duration // default DefaultPollEvery
	Log               *slog.Logger  // nil: discard
	Metrics           *Metrics      // nil: not counted
}

// Run starts the config client and offers content until ctx is done; it returns nil then.
// It returns an error only when the server refuses the credentials (see CheckNacosLogin) or
// the client cannot be created (e.g. a malformed Addr).
func (s *NacosSource) Run(ctx context.Context, offer func(Payload)) error {
	src := *s
	src.defaults()
	log := src.Log.With("component", "config", "source", "nacos", "data_id", src.DataID, "group", src.Group)
	if err := CheckNacosLogin(ctx, src.Addr, src.Username, src.Password, src.Namespace); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	lockNacosClients()
	client, err := clients.NewConfigClient(vo.NacosClientParam{
		ClientConfig:  src.clientConfig(),
		ServerConfigs: src.serverConfigs(),
	})
	InstallNacosLogger(log) // the new client replaced the library's logger with a file logger
	nacosClientMu.Unlock()
	if err != nil {
		return fmt.Errorf("config: nacos client: %w", err)
	}
	defer client.CloseClient()

	wake := make(chan struct{}, 1)
	var heard atomic.Bool // the listener has called back at least once
	notify := func() {
		heard.Store(true)
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	listen := vo.ConfigParam{DataId: src.DataID, Group: src.Group,
		OnChange: func(_, _, _, _ string) { notify() }}
	if err := client.ListenConfig(listen); err != nil {
		// Polling still converges; the listener only makes it faster.
		log.Warn("config: nacos listen failed, relying on polling", "err", err)
	}
	defer client.CancelListenConfig(listen)

	w := nacosWorker{src: &src, log: log, offer: offer,
		// Below the library's 5 qps per key, which its own change queries also use.
		lim: rate.NewLimiter(rate.Limit(3), 3)}
	if src.LocalSnapshotPath != "" {
		w.saver = newSnapshotSaver(src.LocalSnapshotPath, src.Metrics, log)
		var saving sync.WaitGroup
		saving.Go(func() { w.saver.run(ctx) })
		defer saving.Wait()
	}
	get := func() (string, error) {
		return client.GetConfig(vo.ConfigParam{DataId: src.DataID, Group: src.Group})
	}
	if reached, _ := w.fetch(ctx, get); !reached {
		w.offerSnapshot(false)
	}
	w.follow(ctx, get, wake, &heard)
	return nil
}

// follow fetches through get whenever the listener wakes it or the poll timer fires, until
// ctx is done; it polls faster until the listener has called back once (heard) and retries
// sooner after a failed or an unchanged notified fetch.
func (w *nacosWorker) follow(ctx context.Context, get func() (string, error), wake <-chan struct{}, heard *atomic.Bool) {
	// The poll timer restarts after every fetch, so polling adds no queries while pushes
	// keep arriving. The library subscribes in a loop that first runs up to 5 s after
	// ListenConfig, so until the listener has called back once (or startupFastPoll has
	// passed) polls come faster.
	started := time.Now()
	interval := func() time.Duration {
		if !heard.Load() && time.Since(started) < startupFastPoll {
			return min(w.src.PollEvery, 500*time.Millisecond)
		}
		return w.src.PollEvery
	}
	poll := time.NewTimer(interval())
	defer poll.Stop()
	recheck := false // a notified fetch found nothing new: look once more soon
	for {
		notified := false
		select {
		case <-ctx.Done():
			return
		case <-wake:
			notified = true
		case <-poll.C:
		}
		next := interval()
		reached, changed := w.fetch(ctx, get)
		switch {
		case !reached:
			// A change may wait behind a failed fetch: retry sooner than the next poll,
			// soonest after the library's query limiter refused it.
			next = min(next, time.Second)
			if w.limited {
				next = 300 * time.Millisecond
			}
		case notified && !changed && !recheck:
			// The server can push a change a moment before its queries return it.
			recheck = true
			next = 250 * time.Millisecond
		default:
			recheck = false
		}
		poll.Reset(next)
	}
}

// defaultCacheDir is the Nacos SDK's cache and log directory when none is set.
func defaultCacheDir() string { return filepath.Join(os.TempDir(), "seckill-nacos") }

func (s *NacosSource) defaults() {
	s.DataID = cmp.Or(s.DataID, DefaultDataID)
	s.Group = cmp.Or(s.Group, DefaultGroup)
	s.CacheDir = cmp.Or(s.CacheDir, defaultCacheDir())
	if s.PollEvery <= 0 {
		s.PollEvery = DefaultPollEvery
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
}

func (s *NacosSource) clientConfig() *constant.ClientConfig {
	return &constant.ClientConfig{
		NamespaceId:         s.Namespace, // "" for public: "public" breaks push (INFRA.md §4.5)
		Username:            s.Username,
		Password:            s.Password,
		TimeoutMs:           3000,
		CacheDir:            filepath.Join(s.CacheDir, "cache"),
		LogDir:              filepath.Join(s.CacheDir, "log"),
		LogLevel:            "warn",
		NotLoadCacheAtStart: true,
		// We keep our own last-good snapshot; the library's would hide an unreachable server.
		DisableUseSnapShot: true,
	}
}

func (s *NacosSource) serverConfigs() []constant.ServerConfig {
	host, port := splitAddr(s.Addr)
	return []constant.ServerConfig{{IpAddr: host, Port: port, ContextPath: "/nacos"}}
}

// splitAddr splits "host:port"; a malformed address yields port 0, which the SDK rejects.
func splitAddr(addr string) (string, uint64) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ := strconv.ParseUint(p, 10, 16)
	return host, port
}

// nacosWorker is the single goroutine that fetches and offers Nacos content.
type nacosWorker struct {
	src     *NacosSource
	log     *slog.Logger
	offer   func(Payload)
	lim     *rate.Limiter
	saver   *snapshotSaver
	seq     uint64
	last    []byte // last content offered from Nacos
	offered bool   // anything (nacos or cache) offered
	failing bool   // the previous fetch failed (log transitions only)
	limited bool   // the previous fetch was refused by the library's query limiter
}

// fetch gets the content once and offers it if it changed; it reports whether the fetch
// reached the server and whether it found content not offered before.
func (w *nacosWorker) fetch(ctx context.Context, get func() (string, error)) (reached, changed bool) {
	if err := w.lim.Wait(ctx); err != nil {
		return false, false
	}
	w.seq++
	seq := w.seq
	content, err := get()
	// The library's own query limiter refuses with errors.New("ConfigQueryRequest is
	// limited"), which GetConfig passes on formatted (%v): its text is the only signal.
	w.limited = err != nil && strings.Contains(err.Error(), "is limited")
	if err != nil {
		w.src.Metrics.sourceError(SourceNacos)
		if !w.failing {
			w.log.Warn("config: nacos fetch failed, keeping the current configuration", "err", err)
		}
		w.failing = true
		return false, false
	}
	if w.failing {
		w.log.Info("config: nacos reachable again")
		w.failing = false
	}
	data := []byte(content)
	if len(bytes.TrimSpace(data)) == 0 {
		if !w.offered && !w.offerSnapshot(true) {
			w.log.Warn("config: no content in nacos and no local snapshot: not ready until a configuration is published")
			w.offered = true
			w.offer(Payload{Data: nil, Source: SourceNacos, Seq: seq})
			return true, true
		}
		return true, false
	}
	if w.last != nil && bytes.Equal(data, w.last) {
		return true, false
	}
	w.last = data
	w.offered = true
	p := Payload{Data: data, Source: SourceNacos, Seq: seq}
	if w.saver != nil {
		p.Applied = func() { w.saver.save(data) }
	}
	w.offer(p)
	return true, true
}

// offerSnapshot offers the local snapshot once, if there is one and nothing was offered yet.
// reached says Nacos answered (with no content): then a missing snapshot is not logged as an
// unreachable server, the caller says what it found.
func (w *nacosWorker) offerSnapshot(reached bool) bool {
	if w.offered || w.src.LocalSnapshotPath == "" {
		return false
	}
	data, err := ReadRegularFile(w.src.LocalSnapshotPath, MaxDocumentBytes)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("config: reading the local snapshot failed", "path", w.src.LocalSnapshotPath, "err", err)
		} else if !reached {
			w.log.Warn("config: nacos unreachable and no local snapshot: not ready until nacos answers")
		}
		return false
	}
	w.log.Warn("config: starting from the local snapshot", "path", w.src.LocalSnapshotPath)
	w.offered = true
	w.offer(Payload{Data: data, Source: SourceCache})
	return true
}

// writeFileAtomic writes data to a temporary file in path's directory, syncs it and renames
// it over path, so readers see the old or the new content, never a part.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ErrNacosLogin is wrapped by the error CheckNacosLogin returns when the server answers and
// refuses the credentials (or requires credentials and none were given).
var ErrNacosLogin = errors.New("nacos refused the login")

// nacosHTTP is the client of the few Open API calls made outside the SDK.
var nacosHTTP = &http.Client{Timeout: 3 * time.Second}

// CheckNacosLogin asks the Nacos server at addr, once, whether it accepts the credentials,
// so that a wrong password is a start-up error rather than a service that never becomes
// ready. With a username it logs in (POST /nacos/v1/auth/users/login, as the SDK does);
// without one it reads a config and fails if the server demands a login. It returns nil when
// the server accepts, and also when it cannot be reached or answers 502-504 (the sources keep
// retrying then and the service may start from its local snapshot). Nacos 3.1 answers a wrong
// password with HTTP 500; 2.x with 403.
func CheckNacosLogin(ctx context.Context, addr, username, password, namespace string) error {
	if username == "" {
		q := url.Values{"dataId": {"seckill-login-probe"}, "group": {DefaultGroup}}
		if namespace != "" {
			q.Set("tenant", namespace)
		}
		status, body, err := nacosDo(ctx, http.MethodGet, "http://"+addr+"/nacos/v1/cs/configs?"+q.Encode(), nil)
		if err != nil || status != http.StatusForbidden && status != http.StatusUnauthorized {
			return nil
		}
		return fmt.Errorf("%w: nacos at %s requires a login: set SECKILL_NACOS_USERNAME and SECKILL_NACOS_PASSWORD (HTTP %d: %s)",
			ErrNacosLogin, addr, status, nacosMessage(body))
	}
	_, _, err := nacosLoginOnce(ctx, addr, username, password)
	var refused *loginRefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("%w: nacos at %s refused user %q: wrong SECKILL_NACOS_USERNAME or SECKILL_NACOS_PASSWORD? (HTTP %d: %s)",
			ErrNacosLogin, addr, username, refused.status, nacosMessage(refused.body))
	}
	return nil
}

// nacosMessage returns the "message" of a JSON error body, or the body, at most 200 bytes.
func nacosMessage(body string) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Message != "" {
		body = e.Message
	}
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return body
}

// loginRefusedError is a login the server answered with a refusal.
type loginRefusedError struct {
	status int
	body   string
}

func (e *loginRefusedError) Error() string {
	return fmt.Sprintf("nacos login refused: HTTP %d %s", e.status, e.body)
}

// nacosLoginOnce logs in and returns the access token and its lifetime.
func nacosLoginOnce(ctx context.Context, addr, username, password string) (string, time.Duration, error) {
	form := url.Values{"username": {username}, "password": {password}}
	status, body, err := nacosDo(ctx, http.MethodPost, "http://"+addr+"/nacos/v1/auth/users/login", form)
	if err != nil {
		return "", 0, err
	}
	switch {
	case status == http.StatusOK:
	case status >= 502 && status <= 504:
		return "", 0, fmt.Errorf("nacos login: HTTP %d", status)
	default:
		return "", 0, &loginRefusedError{status: status, body: body}
	}
	var out struct {
		AccessToken string `json:"accessToken"`
		TokenTTL    int64  `json:"tokenTtl"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.AccessToken == "" {
		return "", 0, fmt.Errorf("nacos login: no access token in %q", body)
	}
	return out.AccessToken, time.Duration(out.TokenTTL) * time.Second, nil
}

// nacosDo sends one request and returns the status and the (trimmed, bounded) body. Its
// error never holds the access token (see redactURLError).
func nacosDo(ctx context.Context, method, u string, form url.Values) (status int, text string, err error) {
	defer func() { err = redactURLError(err) }()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := nacosHTTP.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// redactURLError replaces by "REDACTED" the value of every query parameter of the URL of the
// first *url.Error in err's chain whose name says it holds a secret (accessToken, password,
// username), and returns err. net/http's errors print the URL, and the Open API takes the
// access token in the query, with which anyone can read the configuration: redacted where the
// error is made, no log line or message further up can print it. It edits the *url.Error in
// place, so call it before any fmt.Errorf wraps err: a wrap formats its message once.
func redactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	base, query, ok := strings.Cut(ue.URL, "?")
	if !ok {
		return err
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		k, _, _ := strings.Cut(p, "=")
		name, uerr := url.QueryUnescape(k)
		if uerr != nil {
			name = k
		}
		name = strings.ToLower(name)
		if strings.Contains(name, "token") || strings.Contains(name, "password") ||
			strings.Contains(name, "secret") || strings.Contains(name, "username") {
			params[i] = k + "=REDACTED"
		}
	}
	ue.URL = base + "?" + strings.Join(params, "&")
	return err
}

// nacosToken keeps an access token for the Open API calls made outside the SDK, logging in
// again when it is within a fifth of its lifetime of expiring or after the server refused it.
type nacosToken struct {
	addr, username, password string

	mu      sync.Mutex // guards the fields below
	token   string
	renewAt time.Time
}

// get returns a valid token, or "" without a username (auth off).
func (t *nacosToken) get(ctx context.Context) (string, error) {
	if t.username == "" {
		return "", nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && time.Now().Before(t.renewAt) {
		return t.token, nil
	}
	tok, ttl, err := nacosLoginOnce(ctx, t.addr, t.username, t.password)
	if err != nil {
		return "", err
	}
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	t.token, t.renewAt = tok, time.Now().Add(ttl*4/5)
	return tok, nil
}

// forget drops the token after the server refused it.
func (t *nacosToken) forget() {
	t.mu.Lock()
	t.token = ""
	t.mu.Unlock()
}

// ReadNacos reads dataID in group of namespace ("" public) from the Nacos server at addr,
// logging in first when username is set (GET /nacos/v1/cs/configs): the content, or found
// false when the server has no such data id.
func ReadNacos(ctx context.Context, addr, username, password, namespace, dataID, group string) (content string, found bool, err error) {
	q := url.Values{"dataId": {dataID}, "group": {group}}
	if namespace != "" {
		q.Set("tenant", namespace)
	}
	if username != "" {
		tok, _, err := nacosLoginOnce(ctx, addr, username, password)
		if err != nil {
			return "", false, fmt.Errorf("nacos login as %q: %w", username, err)
		}
		q.Set("accessToken", tok)
	}
	status, body, err := nacosDo(ctx, http.MethodGet, "http://"+addr+"/nacos/v1/cs/configs?"+q.Encode(), nil)
	if err != nil {
		return "", false, fmt.Errorf("nacos read: %w", err)
	}
	switch status {
	case http.StatusOK:
		return body, true, nil
	case http.StatusNotFound:
		return "", false, nil
	}
	return "", false, fmt.Errorf("nacos read %s/%s: HTTP %d: %s", group, dataID, status, nacosMessage(body))
}

// PublishNacos stores content as dataID in group of namespace ("" public) on the Nacos
// server at addr, logging in first when username is set (POST /nacos/v1/cs/configs, type
// yaml, as the console does). Instances watching the data id apply it within a second.
func PublishNacos(ctx context.Context, addr, username, password, namespace, dataID, group string, content []byte) error {
	q := url.Values{}
	if username != "" {
		tok, _, err := nacosLoginOnce(ctx, addr, username, password)
		if err != nil {
			return fmt.Errorf("nacos login as %q: %w", username, err)
		}
		q.Set("accessToken", tok)
	}
	form := url.Values{"dataId": {dataID}, "group": {group}, "content": {string(content)}, "type": {"yaml"}}
	if namespace != "" {
		form.Set("tenant", namespace)
	}
	status, body, err := nacosDo(ctx, http.MethodPost, "http://"+addr+"/nacos/v1/cs/configs?"+q.Encode(), form)
	if err != nil {
		return fmt.Errorf("nacos publish: %w", err)
	}
	if status != http.StatusOK || strings.TrimSpace(body) != "true" {
		return fmt.Errorf("nacos publish %s/%s: HTTP %d: %s", group, dataID, status, nacosMessage(body))
	}
	return nil
}
