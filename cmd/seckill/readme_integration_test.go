//go:build integration

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// The production example (once the README's, now docs/production.md's) runs as pasted, against
// the servers scripts/services.sh starts: the block is taken from docs/production.md and given
// to bash whole (it builds the binary,
// exports the settings, publishes the configuration to Nacos, migrates and starts the
// service), with three variables set before it so that the run keeps to its own Nacos data
// id, RocketMQ topic and namespace; the service must answer /readyz 200 on the address the
// block gives.
func TestREADMEProductionExampleRunsAsPasted(t *testing.T) {
	testsvc.Redis(t)
	testsvc.MySQL(t)
	nacos := testsvc.NacosAdmin(t)
	raw, err := os.ReadFile("../../docs/production.md")
	if err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, "docs/production.md", string(raw), "Example against the services `scripts/services.sh up` starts")
	if !strings.Contains(block, "go build -o seckill ./cmd/seckill") || !strings.HasSuffix(strings.TrimSpace(block), "./seckill") {
		t.Fatalf("the production example of docs/production.md is not the block this test runs:\n%s", block)
	}
	addr := "127.0.0.1:8080" // what the block gives
	if !strings.Contains(block, "SECKILL_HTTP_ADDR="+addr) {
		t.Fatalf("the block does not bind %s:\n%s", addr, block)
	}
	run := fmt.Sprintf("readme%d", time.Now().UnixNano())
	dataID := run + ".yaml"
	t.Cleanup(func() { nacos.Delete(t, "", dataID, "SECKILL") })
	script := "export SECKILL_NACOS_DATA_ID=" + dataID + " SECKILL_ROCKETMQ_TOPIC=" + run + " SECKILL_NAMESPACE=" + run + "\n" + block
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = "../.." // the module root, where a reader pastes it
	// 3 minutes: the build is a link after the commands' test build.
	startGroup(t, cmd).waitReady(t, "http://"+addr+"/readyz", 3*time.Minute)
}

// docBlock is the first ```sh block after the line that holds marker in doc, the text of the
// file named name.
func docBlock(t *testing.T, name, doc, marker string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("%s has no %q", name, marker)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		t.Fatalf("no sh block after %q", marker)
	}
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("the sh block after %q does not end", marker)
	}
	return rest[:end]
}
