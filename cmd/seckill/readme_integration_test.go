//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	deadline := time.Now().Add(3 * time.Minute) // the build is a link after the commands' test build
	for {
		select {
		case err := <-exited:
			t.Fatalf("the example stopped before /readyz answered 200: %v\n%s", err, tail(out.String()))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on %s not 200 within 3 minutes (last %v)\n%s", addr, err, tail(out.String()))
		}
		time.Sleep(200 * time.Millisecond)
	}
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

// tail is the last 40 lines of s.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
