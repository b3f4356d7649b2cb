package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/syncbuf"
)

// The README's command blocks run as pasted (issue 45 item 6). Every ```sh block of README.md
// has a runner here, chosen by the heading the block sits under; a shell block under any other
// heading, or a fenced block in another shell dialect, fails the test, so a new command block
// cannot go into the README untested.
//
//   - "The two commands": its command lines must be exactly `go run ./cmd/seckill` and
//     `make test`. The go run line is run as pasted (with its comment, by bash -e, from the
//     module root, in embedded mode: no SECKILL_ variable) until the storefront's /readyz on
//     :8080 answers 200. `make test` is not run here: it is the whole suite, this test among
//     it. It is the command CI runs, and .ci/run runs that very line, `make test`, on every
//     submission, so a `make test` that does not run as pasted fails CI itself. This test
//     checks the two lines are the same.
//   - "A five-minute tour": the block runs as pasted by bash -e against the process the first
//     block started (the README says: in another terminal), and its output must show what the
//     README says each line shows.
//
// The go run line compiles the service: in make test, cmd/seckill's earlier tests built the
// commands with the same flags, so it only links; on a cold build cache it compiles the whole
// tree, hence the bound of 5 minutes. It listens on the README's ports, :8080 and
// 127.0.0.1:9090, as pasted, like TestREADMEProductionExampleRunsAsPasted (same package, and
// neither is parallel, so the two never run at once).
func TestREADMECommandsRunAsPasted(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const twoCommands, tour = "The two commands", "A five-minute tour"
	found := map[string]*mdBlock{twoCommands: nil, tour: nil}
	for _, b := range fencedBlocks(string(raw)) {
		switch b.lang {
		case "sh":
		case "yaml", "json", "text":
			continue // not commands
		default:
			t.Errorf("README.md line %d: a ```%s block; the README's commands are ```sh blocks, each run by this test", b.line, b.lang)
			continue
		}
		seen, known := found[b.heading]
		if !known || seen != nil {
			t.Errorf("README.md line %d: a sh block under %q, which this test has no runner for: give it one here, so that it runs as pasted", b.line, b.heading)
			continue
		}
		found[b.heading] = &b
	}
	for h, b := range found {
		if b == nil {
			t.Errorf("README.md has no sh block under %q: this test runs it; change the test with the README", h)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Block 1: the two commands.
	var runLine string
	var cmds []string
	for _, l := range strings.Split(found[twoCommands].text, "\n") {
		c := strings.TrimSpace(l)
		if i := strings.Index(c, "#"); i >= 0 {
			c = strings.TrimSpace(c[:i])
		}
		if c == "" {
			continue
		}
		cmds = append(cmds, c)
		if c == "go run ./cmd/seckill" {
			runLine = l
		}
	}
	if want := []string{"go run ./cmd/seckill", "make test"}; strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the block under %q runs %q; this test knows how to run %q", twoCommands, cmds, want)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*make test(\s|$)`).Match(ci) {
		t.Fatalf(".ci/run no longer runs `make test`, the README's test command")
	}

	for _, addr := range []string{":8080", "127.0.0.1:9090"} {
		var lerr error
		deadline := time.Now().Add(20 * time.Second) // a process of an earlier test may be stopping
		for {
			var l net.Listener
			if l, lerr = net.Listen("tcp", addr); lerr == nil {
				l.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the README's go run listens on %s, which is taken: %v", addr, lerr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	run := exec.Command("bash", "-e", "-c", runLine)
	run.Dir = "../.." // the module root, where a reader pastes it
	run.Env = embeddedEnv(t)
	startGroup(t, run).waitReady(t, "http://127.0.0.1:8080/readyz", 5*time.Minute)

	// Block 2: the tour, in another terminal.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-e", "-c", found[tour].text)
	sh.Dir = "../.."
	sh.Env = embeddedEnv(t)
	got, err := sh.Output()
	if err != nil {
		stderr := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the tour block failed as pasted: %v\nstdout:\n%s\nstderr:\n%s", err, got, stderr)
	}
	checkTour(t, string(got))
}

// checkTour checks the tour's output line by line against what the README says each shows.
func checkTour(t *testing.T, out string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nthe tour printed:\n%s", fmt.Sprintf(format, args...), out)
	}
	if len(lines) != 6 {
		fail("%d lines, want 6 (activity, reservation, its status, replay, refusal, metric)", len(lines))
	}
	// 1. The activity, open with its whole stock (a fresh process).
	for _, want := range []string{`"activityId":"demo"`, `"status":"OPEN"`, `"remaining":100`} {
		if !strings.Contains(lines[0], want) {
			fail("line 1 (the activity) lacks %s", want)
		}
	}
	// 2. The reservation: 202, PENDING, with its id.
	m := regexp.MustCompile(`"reservationId":"(demo\.[^"]+)"`).FindStringSubmatch(lines[1])
	if m == nil || !strings.Contains(lines[1], `"status":"PENDING"`) || !strings.HasSuffix(lines[1], "} 202") {
		fail("line 2 (the reservation) is not a 202 PENDING reservation of demo")
	}
	rid := `"reservationId":"` + m[1] + `"`
	// 3. The same reservation read back by the id the shell variable kept.
	if !strings.Contains(lines[2], rid) || !regexp.MustCompile(`"status":"(PENDING|CONFIRMED)"`).MatchString(lines[2]) {
		fail("line 3 (the status) is not reservation %s, PENDING or CONFIRMED", m[1])
	}
	// 4. The same key again: the same reservation, 200.
	if !strings.Contains(lines[3], rid) || !strings.HasSuffix(lines[3], "} 200") {
		fail("line 4 (the replayed key) is not reservation %s answered 200", m[1])
	}
	// 5. A new key, the same user: 409 ALREADY_PURCHASED with the reservation held.
	if !strings.Contains(lines[4], `"code":"ALREADY_PURCHASED"`) || !strings.Contains(lines[4], rid) || !strings.HasSuffix(lines[4], "} 409") {
		fail("line 5 (a second reservation of the user) is not 409 ALREADY_PURCHASED naming %s", m[1])
	}
	// 6. One new reservation counted (the replay not).
	if lines[5] != `seckill_reservations_accepted_total{activity="demo"} 1` {
		fail("line 6 (the metric) is not seckill_reservations_accepted_total{activity=\"demo\"} 1")
	}
}

// groupRun is a command that startGroup started in a process group of its own.
type groupRun struct {
	cmd  *exec.Cmd
	out  syncbuf.Buffer // its stdout and stderr
	done chan struct{}  // closed once it exited
	err  error          // its exit, once done is closed
}

// startGroup starts cmd in a process group of its own and stops the group when the test
// ends: SIGTERM, and SIGKILL when it still runs 20 s later.
func startGroup(t *testing.T, cmd *exec.Cmd) *groupRun {
	t.Helper()
	r := &groupRun{cmd: cmd, done: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	})
	return r
}

// waitReady waits until url answers 200, at most within; it fails the test when the command
// exits first or the time runs out, with the last lines of its output.
func (r *groupRun) waitReady(t *testing.T, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case <-r.done:
			t.Fatalf("%q stopped before %s answered 200: %v\n%s", r.cmd.Args, url, r.err, lastLines(r.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not 200 within %v of %q (last %v)\n%s", url, within, r.cmd.Args, err, lastLines(r.out.String()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// embeddedEnv is this process's environment without SECKILL_ variables (the README's commands
// run in embedded mode), with a data dir of the test's own (XDG_STATE_HOME) instead of the
// user's.
func embeddedEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_STATE_HOME="+t.TempDir())
}

// mdBlock is one fenced block of a Markdown file: its info string, the heading it sits under,
// its text and the line of its opening fence.
type mdBlock struct {
	lang, heading, text string
	line                int
}

// fencedBlocks lists the fenced (```) blocks of doc in order.
func fencedBlocks(doc string) []mdBlock {
	var blocks []mdBlock
	var cur *mdBlock
	var body []string
	heading := ""
	for i, l := range strings.Split(doc, "\n") {
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				cur.text = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, l)
			continue
		}
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") {
			cur = &mdBlock{lang: strings.TrimSpace(strings.TrimPrefix(t, "```")), heading: heading, line: i + 1}
			continue
		}
		if strings.HasPrefix(l, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
		}
	}
	return blocks
}

// lastLines is the last 40 lines of s.
func lastLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
