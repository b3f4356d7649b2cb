//go:build integration

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// seckill config publish never replaces the live configuration of a running fleet by
// accident: on the real Nacos, a data id that does not exist is published; the same content
// again publishes nothing; another content is refused (exit 1) with what would change, and
// the live data id is left as it was; --force replaces it.
func TestConfigPublishRefusesToOverwriteWithoutForce(t *testing.T) {
	nacos := testsvc.NacosAdmin(t)
	dataID := fmt.Sprintf("publish-%d.yaml", time.Now().UnixNano())
	t.Cleanup(func() { nacos.Delete(t, "", dataID, "SECKILL") })
	env := map[string]string{"SECKILL_NACOS_ADDR": nacos.Addr, "SECKILL_NACOS_USERNAME": nacos.Username,
		"SECKILL_NACOS_PASSWORD": nacos.Password, "SECKILL_NACOS_DATA_ID": dataID, "SECKILL_NACOS_GROUP": "SECKILL"}
	base, err := os.ReadFile("../../config/seckill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml")
	if err := os.WriteFile(first, base, 0o644); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(base), "killSwitch: false", "killSwitch: true", 1)
	if edited == string(base) {
		edited = string(base) + "\n# edited\n"
	}
	if err := os.WriteFile(second, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	publish := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"config", "publish"}, args...), func(k string) string { return env[k] }, &out, &errb)
		return code, out.String(), errb.String()
	}
	live := func() string {
		c, found, err := nacos.Get("", dataID, "SECKILL")
		if err != nil || !found {
			t.Fatalf("reading %s back: found %v, %v", dataID, found, err)
		}
		return strings.TrimSpace(c)
	}
	waitLive := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, found, err := nacos.Get("", dataID, "SECKILL")
			if err == nil && found && strings.TrimSpace(c) == strings.TrimSpace(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not readable as published within 10 s (found %v, %v)", dataID, found, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code, out, errs := publish(first); code != 0 || !strings.Contains(out, "published") {
		t.Fatalf("first publish: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	waitLive(string(base))
	if code, out, errs := publish(first); code != 0 || !strings.Contains(out, "nothing published") {
		t.Fatalf("the same content again: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs := publish(second)
	if code != 3 || !strings.Contains(errs, "--force") || !strings.Contains(errs, "+ ") {
		t.Fatalf("another content without --force: exit %d, stderr %q: want 3, the changes and the --force hint", code, errs)
	}
	if live() != strings.TrimSpace(string(base)) {
		t.Fatalf("the refused publish changed the live data id")
	}
	if code, out, errs := publish("--force", second); code != 0 || !strings.Contains(out, "published") {
		t.Fatalf("--force: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	waitLive(edited)
}
