//go:build integration

package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// TestRedisPasswordAndTLS: against a Redis of the test's own that requires a password and
// speaks only TLS (its plain port off), an instance given SECKILL_REDIS_PASSWORD,
// SECKILL_REDIS_TLS and the CA file starts and sells (the keys land in that Redis); a wrong
// password and a CA that did not sign the server's certificate stop the start, saying why.
func TestRedisPasswordAndTLS(t *testing.T) {
	t.Parallel() // mostly waits; with the drills
	dir := t.TempDir()
	ca, caKey := testCA(t, dir, "ca")
	testCA(t, dir, "other-ca") // signed nothing of this Redis
	cert, key := testServerCert(t, dir, ca, caKey)
	const password = "redis-test-password"
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("redis-server", "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", filepath.Join(dir, "ca.pem"),
		"--tls-auth-clients", "no", "--requirepass", password, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	direct := redis.NewClient(&redis.Options{Addr: addr, Password: password, DisableIdentity: true,
		TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	t.Cleanup(func() { direct.Close() })
	testwait.Eventually(t, 15*time.Second, func() bool { return direct.Ping(context.Background()).Err() == nil },
		"the TLS Redis answers PING; its log: %v", testwait.Lazy(func() string { return tail(filepath.Join(dir, "redis.log"), 20) }))

	opts := realOptions(t)
	opts.RedisAddr, opts.RedisPassword = addr, password
	opts.RedisTLS, opts.RedisTLSCAFile = true, filepath.Join(dir, "ca.pem")
	opts.RedisDurability = inventory.Durability{} // none: the test's Redis persists nothing
	ta := startApp(t, opts, testConfig)
	act := uniq(t, "tls")
	ta.createActivity(t, act, 5, 1, 2, time.Now().Add(-time.Second))
	if a := ta.reserve(t, act, "u1", "k1"); a.status != http.StatusAccepted {
		t.Fatalf("reserve over TLS with a password: %d %v", a.status, a.body)
	}
	if n, err := direct.DBSize(context.Background()).Result(); err != nil || n == 0 {
		t.Fatalf("the TLS Redis holds %d keys (%v): the instance wrote elsewhere", n, err)
	}

	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"wrong password", func(o *Options) { o.RedisPassword = "not-the-password" }, "WRONGPASS"},
		{"another CA", func(o *Options) { o.RedisTLSCAFile = filepath.Join(dir, "other-ca.pem") }, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			tc.edit(&o)
			o.DataDir = t.TempDir()
			o.ConfigFile = filepath.Join(t.TempDir(), "seckill.yaml")
			if err := os.WriteFile(o.ConfigFile, []byte(testConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, err := New(ctx, o, discardLog())
			if err == nil {
				a.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start error %q does not say %q", err, tc.want)
			}
		})
	}
}

// testCA writes a self-signed CA certificate to dir/<name>.pem and returns it with its key.
func testCA(t *testing.T, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// testServerCert writes a certificate for 127.0.0.1 signed by ca, and its key, to dir.
func testServerCert(t *testing.T, dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "redis.crt"), filepath.Join(dir, "redis.key")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "EC PRIVATE KEY", kder)
	return certPath, keyPath
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
