package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const k8sDir = "../kubernetes"

// drainSeconds is how long the service lets in-flight requests finish on SIGTERM (app.drainTimeout).
const drainSeconds = 10

// kustomization is the part of a kustomize Kustomization this base uses, decoded strictly.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	ConfigMapGenerator []cmGenerator `json:"configMapGenerator"`
}

// cmGenerator is a ConfigMap the kustomization generates from files of its directory.
type cmGenerator struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
}

// manifests are every document of deploy/kubernetes, decoded strictly into its API type.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	netpols     map[string]*networkingv1.NetworkPolicy
	monitors    map[string]*serviceMonitor
	jobs        map[string]*batchv1.Job
	// generated are the ConfigMaps the kustomization generates: name -> its files.
	generated map[string][]string
}

// serviceMonitor is the part of a Prometheus Operator ServiceMonitor this base uses, decoded
// strictly (the CRD's Go types are not a dependency here).
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func decodeStrict[T any](t *testing.T, where string, doc []byte) *T {
	t.Helper()
	v := new(T)
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return v
}

// decodeNamed decodes doc strictly into a T and files it in into under its name.
func decodeNamed[T any, P interface {
	*T
	GetName() string
}](t *testing.T, into map[string]*T, where string, doc []byte) {
	t.Helper()
	v := decodeStrict[T](t, where, doc)
	into[P(v).GetName()] = v
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := decodeStrict[kustomization](t, "kustomization.yaml", raw)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string][]string{}
	for _, g := range k.ConfigMapGenerator {
		generated[g.Name] = g.Files
	}
	for _, f := range files {
		b := filepath.Base(f)
		inGenerator := slices.ContainsFunc(k.ConfigMapGenerator, func(g cmGenerator) bool { return slices.Contains(g.Files, b) })
		if b != "kustomization.yaml" && !slices.Contains(k.Resources, b) && !inGenerator {
			t.Errorf("%s is not listed in kustomization.yaml", b)
		}
	}
	m := manifests{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		netpols: map[string]*networkingv1.NetworkPolicy{}, monitors: map[string]*serviceMonitor{},
		jobs: map[string]*batchv1.Job{}, generated: generated,
	}
	for _, res := range k.Resources {
		raw, err := os.ReadFile(filepath.Join(k8sDir, res))
		if err != nil {
			t.Fatalf("kustomization resource: %v", err)
		}
		for i, doc := range docSep.Split(string(raw), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			where := fmt.Sprintf("%s document %d", res, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
			case "apps/v1 Deployment":
				decodeNamed(t, m.deployments, where, []byte(doc))
			case "v1 Service":
				decodeNamed(t, m.services, where, []byte(doc))
			case "v1 ConfigMap":
				decodeNamed(t, m.configMaps, where, []byte(doc))
			case "v1 Secret":
				decodeNamed(t, m.secrets, where, []byte(doc))
			case "policy/v1 PodDisruptionBudget":
				decodeNamed(t, m.pdbs, where, []byte(doc))
			case "autoscaling/v2 HorizontalPodAutoscaler":
				decodeNamed(t, m.hpas, where, []byte(doc))
			case "networking.k8s.io/v1 NetworkPolicy":
				decodeNamed(t, m.netpols, where, []byte(doc))
			case "batch/v1 Job":
				decodeNamed(t, m.jobs, where, []byte(doc))
			case "monitoring.coreos.com/v1 ServiceMonitor":
				decodeNamed(t, m.monitors, where, []byte(doc))
			default:
				t.Fatalf("%s: unexpected kind %q", where, gvk)
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestStrictDecodingRefusesUnknownFields: the decoder used below does fail on a typo.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n")
	if err := yaml.UnmarshalStrict(doc, new(appsv1.Deployment)); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("unknown field accepted: %v", err)
	}
}

func env(c corev1.Container, m manifests, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			if cm := m.configMaps[from.ConfigMapRef.Name]; cm != nil {
				if v, ok := cm.Data[name]; ok {
					return v, true
				}
			}
		}
		if from.SecretRef != nil {
			if s := m.secrets[from.SecretRef.Name]; s != nil {
				if v, ok := s.StringData[name]; ok {
					return v, true
				}
			}
		}
	}
	return "", false
}

func portNamed(c corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	api := m.deployments["seckill-api"]
	roles := map[string]*appsv1.Deployment{}
	for _, r := range []string{"relay", "writer", "reconciler"} {
		roles[r] = m.deployments["seckill-"+r]
	}
	if api == nil || roles["relay"] == nil || roles["writer"] == nil || roles["reconciler"] == nil || len(m.deployments) != 4 {
		t.Fatalf("want Deployments seckill-api, seckill-relay, seckill-writer and seckill-reconciler, have %v", keys(m.deployments))
	}
	for _, d := range m.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s: selector does not match its pod labels (%v)", d.Name, err)
		}
		if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= drainSeconds {
			t.Errorf("%s: terminationGracePeriodSeconds %v, want more than the %d s drain", d.Name, g, drainSeconds)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("%s: want one container", d.Name)
		}
		c := d.Spec.Template.Spec.Containers[0]
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil && m.configMaps[from.ConfigMapRef.Name] == nil {
				t.Errorf("%s: envFrom ConfigMap %s does not exist", d.Name, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil && m.secrets[from.SecretRef.Name] == nil {
				t.Errorf("%s: envFrom Secret %s does not exist", d.Name, from.SecretRef.Name)
			}
		}
		if _, ok := env(c, m, "SECKILL_ADMIN_TOKEN"); !ok {
			t.Errorf("%s: no admin token from the Secret", d.Name)
		}
		// The committed Secret holds a placeholder the service refuses (under 32 bytes), so
		// nobody commits a real token and an unedited deploy fails to start.
		if tok, _ := env(c, m, "SECKILL_ADMIN_TOKEN"); len(tok) >= 32 || !strings.Contains(strings.ToUpper(tok), "REPLACE") {
			t.Errorf("%s: admin token %q in the committed Secret: want a REPLACE placeholder shorter than 32 bytes", d.Name, tok)
		}
		// Secrets come from the Secret, never the ConfigMap; their placeholders are invalid.
		for _, k := range []string{"SECKILL_NACOS_USERNAME", "SECKILL_NACOS_PASSWORD", "SECKILL_USER_HASH_KEY", "SECKILL_MYSQL_DSN"} {
			if _, ok := m.secrets["seckill-secrets"].StringData[k]; !ok {
				t.Errorf("%s: %s is not in the Secret seckill-secrets", d.Name, k)
			}
			if _, ok := m.configMaps["seckill-env"].Data[k]; ok {
				t.Errorf("%s: %s is in the ConfigMap: secrets belong in the Secret", d.Name, k)
			}
		}
		if key, _ := env(c, m, "SECKILL_USER_HASH_KEY"); !strings.Contains(key, "REPLACE") {
			t.Errorf("%s: user-hash key %q in the committed Secret: want a REPLACE placeholder (not hex: refused at start)", d.Name, key)
		}
		if img := c.Image; strings.HasSuffix(img, ":latest") || !strings.Contains(img, ":") && !strings.Contains(img, "@sha256:") {
			t.Errorf("%s: image %q: want a pinned tag or digest, not latest", d.Name, img)
		}
		restrictedProfile(t, d)
		for _, k := range []string{"SECKILL_REDIS_ADDR", "SECKILL_MYSQL_DSN", "SECKILL_ROCKETMQ_NAMESRV", "SECKILL_NACOS_ADDR", "SECKILL_DATA_DIR"} {
			if _, ok := env(c, m, k); !ok {
				t.Errorf("%s: %s not set", d.Name, k)
			}
		}
		if dir, _ := env(c, m, "SECKILL_DATA_DIR"); !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == dir }) {
			t.Errorf("%s: data dir %s is not a mounted volume (the root file system is read-only)", d.Name, dir)
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil || !portNamed(c, p.HTTPGet.Port.String()) {
				t.Errorf("%s: probe missing or on an unnamed port: %+v", d.Name, p)
			}
		}
		if c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s: no CPU request (the HPA needs one)", d.Name)
		}
	}
	c := api.Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("api readiness probe %+v, want GET /readyz", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("api liveness probe %+v, want GET /healthz", p)
	}
	if roles, _ := env(c, m, "SECKILL_ROLES"); roles != "api" {
		t.Errorf("api pods run roles %q, want api", roles)
	}
	for r, d := range roles {
		if got, _ := env(d.Spec.Template.Spec.Containers[0], m, "SECKILL_ROLES"); got != r {
			t.Errorf("%s pods run roles %q, want %s alone (so each scales apart)", d.Name, got, r)
		}
	}
	if g, pre := *api.Spec.Template.Spec.TerminationGracePeriodSeconds, c.Lifecycle; pre != nil && pre.PreStop != nil && pre.PreStop.Exec != nil {
		pause := 0
		fmt.Sscanf(strings.Join(pre.PreStop.Exec.Command, " "), "sleep %d", &pause)
		if int64(pause+drainSeconds) >= g {
			t.Errorf("api: preStop %d s + drain %d s do not fit the %d s grace period", pause, drainSeconds, g)
		}
	}

	svc := m.services["seckill"]
	if svc == nil {
		t.Fatalf("no Service seckill")
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(api.Spec.Template.Labels)) ||
		labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(roles["writer"].Spec.Template.Labels)) {
		t.Errorf("Service selects %v: want the api pods only", svc.Spec.Selector)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() != "http" || !portNamed(c, "http") {
			t.Errorf("Service port %s targets %s: want the storefront port only (admin stays private)", p.Name, p.TargetPort.String())
		}
	}

	pdb := m.pdbs["seckill-api"]
	if pdb == nil {
		t.Fatalf("no PodDisruptionBudget for the api pods")
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(api.Spec.Template.Labels)) || pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
		t.Errorf("PodDisruptionBudget does not cover the api pods: %+v (%v)", pdb.Spec, err)
	}

	hpa := m.hpas["seckill-api"]
	if hpa == nil {
		t.Fatalf("no HorizontalPodAutoscaler for the api pods")
	}
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != api.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA scales %+v, want the api Deployment", ref)
	}
	cpu := slices.ContainsFunc(hpa.Spec.Metrics, func(ms autoscalingv2.MetricSpec) bool {
		return ms.Type == autoscalingv2.ResourceMetricSourceType && ms.Resource != nil && ms.Resource.Name == corev1.ResourceCPU &&
			ms.Resource.Target.AverageUtilization != nil
	})
	if !cpu || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("HPA: want CPU utilisation, at least 2 replicas: %+v", hpa.Spec)
	}
	if pdb.Spec.MinAvailable != nil && hpa.Spec.MinReplicas != nil && pdb.Spec.MinAvailable.IntValue() >= int(*hpa.Spec.MinReplicas) {
		t.Errorf("PDB minAvailable %v blocks every drain at the HPA's %d minimum replicas", pdb.Spec.MinAvailable, *hpa.Spec.MinReplicas)
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// restrictedProfile checks a Deployment's pods against the Pod Security Standards'
// "restricted" profile (kubernetes.io/docs/concepts/security/pod-security-standards): non-root,
// no privilege escalation, every capability dropped, the RuntimeDefault seccomp profile, no
// host namespaces, ports or paths, and only the volume types it allows.
func restrictedProfile(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if ps.HostNetwork || ps.HostPID || ps.HostIPC {
		t.Errorf("%s: host namespaces", d.Name)
	}
	pod := ps.SecurityContext
	if pod == nil {
		t.Errorf("%s: no pod securityContext", d.Name)
		pod = &corev1.PodSecurityContext{}
	}
	for _, v := range ps.Volumes {
		vs := v.VolumeSource
		if vs.EmptyDir == nil && vs.ConfigMap == nil && vs.Secret == nil && vs.Projected == nil && vs.DownwardAPI == nil &&
			vs.PersistentVolumeClaim == nil && vs.Ephemeral == nil && vs.CSI == nil {
			t.Errorf("%s: volume %s of a type the restricted profile refuses", d.Name, v.Name)
		}
	}
	for _, c := range append(append([]corev1.Container{}, ps.InitContainers...), ps.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s/%s: no container securityContext", d.Name, c.Name)
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s/%s: privileged", d.Name, c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s/%s: allowPrivilegeEscalation must be false", d.Name, c.Name)
		}
		nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot || sc.RunAsNonRoot == nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
		if !nonRoot {
			t.Errorf("%s/%s: runAsNonRoot must be true", d.Name, c.Name)
		}
		for _, uid := range []*int64{sc.RunAsUser, pod.RunAsUser} {
			if uid != nil && *uid == 0 {
				t.Errorf("%s/%s: runAsUser 0", d.Name, c.Name)
			}
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s/%s: capabilities must drop ALL", d.Name, c.Name)
		} else if len(sc.Capabilities.Add) > 0 && !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
			t.Errorf("%s/%s: capabilities added %v: only NET_BIND_SERVICE is allowed", d.Name, c.Name, sc.Capabilities.Add)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = pod.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost {
			t.Errorf("%s/%s: seccompProfile must be RuntimeDefault (or Localhost)", d.Name, c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("%s/%s: hostPort %d", d.Name, c.Name, p.HostPort)
			}
		}
	}
}

// The admin port is reachable only from selected peers, the storefront port from any; a
// ServiceMonitor scrapes /metrics on the admin port through a Service that selects every pod.
func TestAdminPortPolicyAndServiceMonitor(t *testing.T) {
	m := loadManifests(t)
	np := m.netpols["seckill-admin-port"]
	if np == nil {
		t.Fatalf("no NetworkPolicy seckill-admin-port")
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range m.deployments {
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy does not cover %s", name)
		}
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("NetworkPolicy policyTypes %v, want Ingress", np.Spec.PolicyTypes)
	}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.IntValue() == 9090 && len(r.From) == 0 {
				t.Errorf("NetworkPolicy opens the admin port 9090 to every peer")
			}
		}
	}
	admin := m.services["seckill-admin"]
	sm := m.monitors["seckill"]
	if admin == nil || sm == nil {
		t.Fatalf("want Service seckill-admin and ServiceMonitor seckill")
	}
	smSel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || !smSel.Matches(labels.Set(admin.Labels)) {
		t.Errorf("ServiceMonitor selector %v does not select Service seckill-admin (%v)", sm.Spec.Selector, err)
	}
	for name, d := range m.deployments {
		if !labels.SelectorFromSet(admin.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Service seckill-admin does not select %s", name)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "admin" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port admin, /metrics", sm.Spec.Endpoints)
	}
}

// The hot configuration reaches Nacos from the manifests too: a Job runs seckill config
// publish (without --force: a live configuration is never replaced by a re-apply) on the file
// of a generated ConfigMap, with the Nacos address and credentials of the pods; the file has
// the settings docker/seckill-nacos.yaml has (kustomize reads files of its directory only, so
// it is a copy: this keeps the two the same); the pod meets the restricted profile.
func TestConfigPublishJob(t *testing.T) {
	m := loadManifests(t)
	j := m.jobs["seckill-config-publish"]
	if j == nil {
		t.Fatalf("no Job seckill-config-publish: have %v", keys(m.jobs))
	}
	ps := j.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%s: want one container", j.Name)
	}
	c := ps.Containers[0]
	if !slices.Equal(c.Args, []string{"config", "publish", "/config/seckill.yaml"}) {
		t.Errorf("%s: args %q, want config publish /config/seckill.yaml (no --force)", j.Name, c.Args)
	}
	for _, k := range []string{"SECKILL_NACOS_ADDR", "SECKILL_NACOS_USERNAME", "SECKILL_NACOS_PASSWORD", "SECKILL_NACOS_DATA_ID", "SECKILL_NACOS_GROUP"} {
		if _, ok := env(c, m, k); !ok {
			t.Errorf("%s: %s not set", j.Name, k)
		}
	}
	var file string
	for _, v := range ps.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		files := m.generated[v.ConfigMap.Name]
		if files == nil {
			t.Fatalf("%s: volume %s names ConfigMap %s, which the kustomization does not generate", j.Name, v.Name, v.ConfigMap.Name)
		}
		for _, it := range v.ConfigMap.Items {
			if it.Path == "seckill.yaml" && slices.Contains(files, it.Key) {
				file = it.Key
			}
		}
	}
	if file == "" {
		t.Fatalf("%s: no generated file mounted as seckill.yaml", j.Name)
	}
	// A refusal (exit 3: Nacos holds another configuration) fails the Job at once, no retries.
	refusalFails := false
	if pfp := j.Spec.PodFailurePolicy; pfp != nil && ps.RestartPolicy == corev1.RestartPolicyNever {
		for _, r := range pfp.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil && slices.Contains(r.OnExitCodes.Values, 3) {
				refusalFails = true
			}
		}
	}
	if !refusalFails {
		t.Errorf("%s: want restartPolicy Never and a podFailurePolicy that fails the Job on exit 3 (a refusal is not retried)", j.Name)
	}
	restrictedProfile(t, &appsv1.Deployment{ObjectMeta: j.ObjectMeta, Spec: appsv1.DeploymentSpec{Template: j.Spec.Template}})
	k8s, err := os.ReadFile(filepath.Join(k8sDir, file))
	if err != nil {
		t.Fatal(err)
	}
	compose, err := os.ReadFile("../../docker/seckill-nacos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if stripComments(string(k8s)) != stripComments(string(compose)) {
		t.Errorf("deploy/kubernetes/%s and docker/seckill-nacos.yaml differ beyond their comments", file)
	}
}
