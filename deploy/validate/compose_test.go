package validate

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

const dockerDir = "../../docker"

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	dir, err := filepath.Abs(dockerDir)
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml")}},
		Environment: types.Mapping{"SECKILL_ADMIN_TOKEN": strings.Repeat("a", 64), "SECKILL_USER_HASH_KEY": strings.Repeat("0f", 32)},
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("seckill", true)
	})
	if err != nil {
		t.Fatalf("docker/compose.yaml: %v", err)
	}
	return p
}

// TestComposeFile loads docker/compose.yaml with the compose-spec loader (schema validation
// included) and checks the start-up order, restarts and the data volume.
func TestComposeFile(t *testing.T) {
	p := loadCompose(t)
	svc, ok := p.Services["seckill"]
	if !ok {
		t.Fatal("no seckill service")
	}
	if svc.Restart != "on-failure" {
		t.Errorf("seckill restart %q, want on-failure", svc.Restart)
	}
	if svc.HealthCheck == nil || len(svc.HealthCheck.Test) == 0 {
		t.Errorf("seckill has no health check")
	}
	// Nacos is reached through nacos-init, which runs once the server is healthy.
	if d := svc.DependsOn["nacos-init"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("seckill depends on nacos-init with %q, want %s", d.Condition, types.ServiceConditionCompletedSuccessfully)
	}
	if d := p.Services["nacos-init"].DependsOn["nacos"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("nacos-init depends on nacos with %q, want %s", d.Condition, types.ServiceConditionHealthy)
	}
	for _, dep := range []string{"redis", "mysql", "broker"} {
		d, ok := svc.DependsOn[dep]
		if !ok {
			t.Errorf("seckill does not depend on %s", dep)
			continue
		}
		if d.Condition != types.ServiceConditionHealthy {
			t.Errorf("seckill depends on %s with %q, want %s", dep, d.Condition, types.ServiceConditionHealthy)
		}
	}
	// Every dependency with condition service_healthy has a health check, or compose waits forever.
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition != types.ServiceConditionHealthy {
				continue
			}
			if h := p.Services[dep].HealthCheck; h == nil || len(h.Test) == 0 || h.Disable {
				t.Errorf("%s waits for %s to be healthy, but %s has no health check", name, dep, dep)
			}
		}
	}
	if b := p.Services["broker"]; b.DependsOn["namesrv"].Condition != types.ServiceConditionHealthy {
		t.Errorf("broker does not wait for a healthy name server")
	}

	env := func(k string) string {
		v := svc.Environment[k]
		if v == nil {
			return ""
		}
		return *v
	}
	dataDir := env("SECKILL_DATA_DIR")
	if dataDir == "" {
		t.Fatalf("seckill has no SECKILL_DATA_DIR")
	}
	onVolume := false
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == dataDir {
			if _, ok := p.Volumes[v.Source]; ok {
				onVolume = true
			}
		}
	}
	if !onVolume {
		t.Errorf("SECKILL_DATA_DIR %s is not on a named volume", dataDir)
	}
	if len(env("SECKILL_ADMIN_TOKEN")) < 32 {
		t.Errorf("admin token from the environment not passed through")
	}
	if env("SECKILL_USER_HASH_KEY") != strings.Repeat("0f", 32) {
		t.Errorf("user-hash key from the environment not passed through")
	}
	// More than the service's own 10 s drain, which compose's default 10 s would cut short.
	if g := svc.StopGracePeriod; g == nil || time.Duration(*g) <= 10*time.Second {
		t.Errorf("seckill stop_grace_period %v, want more than the 10 s drain", g)
	}
	if r := svc.Deploy; r == nil || r.Resources.Limits == nil || r.Resources.Limits.NanoCPUs <= 0 || r.Resources.Limits.MemoryBytes <= 0 {
		t.Errorf("seckill has no CPU and memory limits: %+v", r)
	}
	// The admin port is published on the host's loopback only.
	for _, port := range svc.Ports {
		if port.Target == 9090 && port.HostIP != "127.0.0.1" {
			t.Errorf("admin port published on %q, want 127.0.0.1", port.HostIP)
		}
	}
}

// TestDockerfileRuntimeStageCopiesOnlyBinaryAndYAML: no Go sources in the image.
func TestDockerfileRuntimeStageCopiesOnlyBinaryAndYAML(t *testing.T) {
	f, err := os.Open(filepath.Join(dockerDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stage int
	var copies [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			stage++
			copies = nil
		case "COPY", "ADD":
			copies = append(copies, fields[1:])
		}
	}
	if stage < 2 || len(copies) == 0 {
		t.Fatalf("want a multi-stage Dockerfile whose last stage copies files, got %d stages", stage)
	}
	for _, c := range copies {
		if strings.HasPrefix(c[0], "--from=") {
			continue
		}
		for _, src := range c[:len(c)-1] {
			if !strings.HasSuffix(src, ".yaml") {
				t.Errorf("runtime stage copies %q from the build context: only YAML configs belong in the image", src)
			}
		}
	}
}

// TestImageHasNoDefaultConfig: the runtime stage must not place a config at the service's
// default path (config/seckill.yaml under WORKDIR /app), which would start a production image
// without Nacos on the header-mode example.
func TestImageHasNoDefaultConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(dockerDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.EqualFold(f[0], "COPY") || strings.HasPrefix(f[1], "--from=") {
			continue
		}
		dst := f[len(f)-1]
		if dst == "/app/config/" || dst == "/app/config" || dst == "/app/config/seckill.yaml" || dst == "config/" {
			t.Errorf("Dockerfile %q puts YAML at the default config path /app/config/seckill.yaml", line)
		}
	}
}

// TestNacosInitPublishesTheConfig: a missing data id leaves the service not ready, so the init
// step must publish one, under the data id and group the service reads, from a YAML file that
// states an identity mode.
func TestNacosInitPublishesTheConfig(t *testing.T) {
	p := loadCompose(t)
	initSvc, ok := p.Services["nacos-init"]
	if !ok {
		t.Fatal("no nacos-init service")
	}
	env := func(s types.ServiceConfig, k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	svc := p.Services["seckill"]
	if got, want := env(initSvc, "DATA_ID"), env(svc, "SECKILL_NACOS_DATA_ID"); got == "" || got != want {
		t.Errorf("nacos-init publishes data id %q, the service reads %q", got, want)
	}
	if got, want := env(initSvc, "GROUP"), env(svc, "SECKILL_NACOS_GROUP"); got == "" || got != want {
		t.Errorf("nacos-init publishes group %q, the service reads %q", got, want)
	}
	mounts := map[string]string{}
	for _, v := range initSvc.Volumes {
		if v.Type == types.VolumeTypeBind {
			mounts[v.Target] = v.Source
		}
	}
	script, ok := mounts[strings.TrimPrefix(strings.Join(initSvc.Entrypoint, " "), "sh ")]
	if !ok {
		t.Fatalf("nacos-init entrypoint %v is not a mounted script (mounts %v)", initSvc.Entrypoint, mounts)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-X POST \"$SERVER/nacos/v1/cs/configs", "content@$CONFIG_FILE", "set -eu"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not publish the config: %q missing", script, want)
		}
	}
	cfg, ok := mounts[env(initSvc, "CONFIG_FILE")]
	if !ok {
		t.Fatalf("CONFIG_FILE %q is not mounted into nacos-init", env(initSvc, "CONFIG_FILE"))
	}
	c, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c), "\nauth:\n  mode: ") {
		t.Errorf("%s states no auth.mode: the service refuses a config without one", cfg)
	}
}

// TestComposeMonitoring: compose runs Prometheus, scraping the service's admin port with the
// shipped rules (its config passes promtool check config with the rules beside it, as
// mounted), and Grafana provisioned with that Prometheus and docs/grafana-dashboard.json;
// every file they mount exists, and both publish on the host's loopback only.
func TestComposeMonitoring(t *testing.T) {
	p := loadCompose(t)
	dir, err := filepath.Abs(dockerDir)
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]string{} // target -> source
	for _, name := range []string{"prometheus", "grafana"} {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		if s.Image == "" || strings.HasSuffix(s.Image, ":latest") || !strings.Contains(s.Image, ":") {
			t.Errorf("%s image %q: want a pinned tag", name, s.Image)
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes port %d on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s, which does not exist: %v", name, v.Source, err)
			}
			mounted[v.Target] = v.Source
		}
	}
	if got := mounted["/var/lib/grafana/dashboards/seckill.json"]; filepath.Clean(got) != filepath.Join(dir, "..", "docs", "grafana-dashboard.json") {
		t.Errorf("grafana mounts %q as the dashboard, want docs/grafana-dashboard.json", got)
	}
	if env := p.Services["seckill"].Environment["SECKILL_ADMIN_ADDR"]; env == nil || *env != ":9090" {
		t.Errorf("seckill admin address %v: the Prometheus config scrapes seckill:9090", env)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), `"seckill:9090"`) || !strings.Contains(string(cfg), "seckill-rules.yml") {
		t.Errorf("docker/prometheus.yml does not scrape seckill:9090 with seckill-rules.yml:\n%s", cfg)
	}
	// promtool check config, with the files where the container has them: the rules beside
	// the config.
	etc := t.TempDir()
	for target, src := range mounted {
		if filepath.Dir(target) != "/etc/prometheus" {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, filepath.Base(target)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(promtool(t), "check", "config", filepath.Join(etc, "prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// TestComposeRedisPersists: both Redis nodes of compose run with AOF on a named volume, and
// the service asks for it (SECKILL_REDIS_DURABILITY names aof): a restart of a Redis container
// keeps the reservations answered 202.
func TestComposeRedisPersists(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"redis", "redis-replica"} {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		cmd := strings.Join(s.Command, " ")
		if !strings.Contains(cmd, "--appendonly yes") {
			t.Errorf("%s runs %q: want --appendonly yes", name, cmd)
		}
		onVolume := false
		for _, v := range s.Volumes {
			_, named := p.Volumes[v.Source]
			onVolume = onVolume || v.Type == types.VolumeTypeVolume && v.Target == "/data" && named
		}
		if !onVolume {
			t.Errorf("%s keeps /data on no named volume: %+v", name, s.Volumes)
		}
	}
	if d := p.Services["seckill"].Environment["SECKILL_REDIS_DURABILITY"]; d == nil || !strings.Contains(*d, "aof") {
		t.Errorf("seckill SECKILL_REDIS_DURABILITY %v: want a mode with aof", d)
	}
}
