package config

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

// Registry defaults.
const (
	DefaultServiceName  = "seckill"
	DefaultRefreshEvery = 2 * time.Second
)

// NacosRegistry registers this instance in Nacos naming as an ephemeral instance (kept
// alive by the client's connection, removed by the server when it drops) and counts the
// healthy instances of the service, which the fallback limiter divides its budget by.
//
// Healthy never returns less than 1: this instance is alive even when it cannot see itself.
// When Nacos is unreachable the last known count is kept; before any count is known Healthy
// returns 1, so the fallback never gives this instance less than its share (it may give it
// more than its share for as long as Nacos is unreachable at start: the safer error for
// availability, bounded by the fallback's global budget on each instance).
type NacosRegistry struct {
	Addr         string // "host:port" of the Nacos HTTP port
	ServiceName  string // default DefaultServiceName
	Group        string // default DefaultGroup
	Namespace    string // namespace id; "" is public
	Username     string // "" when the server runs without auth
	Password     string // Username's password
	IP           string // address other instances would reach this one at
	Port         uint64
	InstanceID   string        // stored in the instance metadata as "instanceId"
	CacheDir     string        // SDK cache and log directory; default a temp dir
	RefreshEvery time.Duration // default DefaultRefreshEvery
	Log          *slog.Logger  // nil: discard
	Metrics      *Metrics      // nil: not exported

	healthy atomic.Int64 // 0 = never known
	token   nacosToken   // for the Open API count; set by Run under mu, before it counts

	mu      sync.Mutex // guards the fields below
	stopc   chan struct{}
	done    chan struct{}
	closed  bool
	running bool
}

// Healthy returns the number of healthy registered instances, at least 1. Safe for
// concurrent use.
func (r *NacosRegistry) Healthy() int {
	if n := r.healthy.Load(); n > 1 {
		return int(n)
	}
	return 1
}

// Run registers the instance and refreshes the healthy count every RefreshEvery until ctx is
// done or Close is called; then it deregisters and returns nil. A failed registration is
// retried on every refresh. It returns an error only if the client cannot be created.
func (r *NacosRegistry) Run(ctx context.Context) error {
	r.ServiceName = cmp.Or(r.ServiceName, DefaultServiceName)
	r.Group = cmp.Or(r.Group, DefaultGroup)
	r.CacheDir = cmp.Or(r.CacheDir, defaultCacheDir())
	if r.RefreshEvery <= 0 {
		r.RefreshEvery = DefaultRefreshEvery
	}
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "config", "registry", r.ServiceName, "instance", r.InstanceID)
	host, port := splitAddr(r.Addr)
	lockNacosClients()
	client, err := clients.NewNamingClient(vo.NacosClientParam{
		ClientConfig: &constant.ClientConfig{
			NamespaceId:         r.Namespace,
			Username:            r.Username,
			Password:            r.Password,
			TimeoutMs:           3000,
			CacheDir:            filepath.Join(r.CacheDir, "naming-cache"),
			LogDir:              filepath.Join(r.CacheDir, "log"),
			LogLevel:            "warn",
			NotLoadCacheAtStart: true,
		},
		ServerConfigs: []constant.ServerConfig{{IpAddr: host, Port: port, ContextPath: "/nacos"}},
	})
	InstallNacosLogger(log) // the new client replaced the library's logger with a file logger
	nacosClientMu.Unlock()
	if err != nil {
		return fmt.Errorf("config: nacos naming client: %w", err)
	}
	r.mu.Lock()
	if r.closed || r.running {
		r.mu.Unlock()
		client.CloseClient()
		return nil
	}
	r.running, r.done = true, make(chan struct{})
	r.token = nacosToken{addr: r.Addr, username: r.Username, password: r.Password}
	r.mu.Unlock()
	defer close(r.done)

	registered := false
	tick := time.NewTicker(r.RefreshEvery)
	defer tick.Stop()
	stop := r.stopChan()
	for {
		if !registered {
			ok, err := client.RegisterInstance(vo.RegisterInstanceParam{
				Ip: r.IP, Port: r.Port, Weight: 1, Enable: true, Healthy: true, Ephemeral: true,
				ServiceName: r.ServiceName, GroupName: r.Group,
				Metadata: map[string]string{"instanceId": r.InstanceID},
			})
			if err != nil || !ok {
				log.Warn("config: nacos registration failed, retrying", "err", err)
			} else {
				registered = true
				log.Info("config: registered in nacos naming", "ip", r.IP, "port", r.Port)
			}
		}
		r.refresh(log)
		select {
		case <-ctx.Done():
			r.shutdown(client, registered, log)
			return nil
		case <-stop:
			r.shutdown(client, registered, log)
			return nil
		case <-tick.C:
		}
	}
}

// refresh counts the healthy instances through the Open API (GET /nacos/v1/ns/instance/list)
// rather than the SDK's SelectInstances: that subscribes, and nacos-sdk-go v2.3.2 sorts its
// cached instance slice in place on every push while readers walk it (a data race).
func (r *NacosRegistry) refresh(log *slog.Logger) {
	q := url.Values{"serviceName": {r.ServiceName}, "groupName": {r.Group}, "healthyOnly": {"true"}}
	if r.Namespace != "" {
		q.Set("namespaceId", r.Namespace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tok, err := r.token.get(ctx)
	if err != nil {
		log.Debug("config: nacos login for the instance count failed, keeping the last", "err", err)
		return
	}
	if tok != "" {
		q.Set("accessToken", tok)
	}
	status, text, err := nacosDo(ctx, http.MethodGet, "http://"+r.Addr+"/nacos/v1/ns/instance/list?"+q.Encode(), nil)
	if err != nil {
		log.Debug("config: nacos instance count failed, keeping the last", "err", err)
		return
	}
	var body struct {
		Hosts []struct {
			Healthy *bool `json:"healthy"`
			Enabled *bool `json:"enabled"`
		} `json:"hosts"`
	}
	if status == http.StatusForbidden || status == http.StatusUnauthorized {
		r.token.forget()
	}
	if status != http.StatusOK {
		log.Debug("config: nacos instance count failed, keeping the last", "status", status)
		return
	}
	if err := json.Unmarshal([]byte(text), &body); err != nil {
		log.Debug("config: nacos instance count undecodable, keeping the last", "err", err)
		return
	}
	n := 0
	for _, h := range body.Hosts {
		if (h.Healthy == nil || *h.Healthy) && (h.Enabled == nil || *h.Enabled) {
			n++
		}
	}
	r.store(n)
}

func (r *NacosRegistry) store(n int) {
	r.healthy.Store(int64(n))
	if r.Metrics != nil {
		r.Metrics.healthyInstances.Set(float64(r.Healthy()))
	}
}

// stop channel: closed by Close.
func (r *NacosRegistry) stopChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopc == nil {
		r.stopc = make(chan struct{})
	}
	return r.stopc
}

func (r *NacosRegistry) shutdown(client naming_client.INamingClient, registered bool, log *slog.Logger) {
	if registered {
		if _, err := client.DeregisterInstance(vo.DeregisterInstanceParam{
			Ip: r.IP, Port: r.Port, ServiceName: r.ServiceName, GroupName: r.Group, Ephemeral: true,
		}); err != nil {
			log.Warn("config: nacos deregistration failed (the server drops the ephemeral instance with the connection)", "err", err)
		}
	}
	client.CloseClient()
}

// Close deregisters the instance, stops Run and waits for it. Safe to call more than once
// and before Run.
func (r *NacosRegistry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	if r.stopc == nil {
		r.stopc = make(chan struct{})
	}
	close(r.stopc)
	running, done := r.running, r.done
	r.mu.Unlock()
	if running {
		<-done
	}
	return nil
}
