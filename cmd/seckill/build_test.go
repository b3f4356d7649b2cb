package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make build stamps the binary with the release (git describe) and the commit, and
// --version prints both: a build says what it is, not "(devel)".
func TestMakeBuildStampsTheVersion(t *testing.T) {
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	version, commit := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	dir := t.TempDir()
	args := []string{"make", "-s", "build", "BUILD_DIR=" + dir}
	if nice, err := exec.LookPath("nice"); err == nil {
		args = append([]string{nice, "-n", "19"}, args...) // beside the other tests, as buildCommands
	}
	mk := exec.Command(args[0], args[1:]...)
	mk.Dir = "../.."
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "seckill"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("seckill --version: %v\n%s", err, out)
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, "seckill "+version+" ") || !strings.Contains(line, "revision "+commit) || strings.Contains(line, "(devel)") {
		t.Fatalf("seckill --version of a make build: %q, want release %s and revision %s", line, version, commit)
	}
}
