package testsvc

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Child runs this test binary again, as a child process of the test, with args (such as
// -test.run=^TestX$) and env added to this process's environment; its stderr goes to stderr.
// It returns the child's stdin and stdout. When the test ends, stdin is closed (a child reads
// it to know when to exit) and the child is waited for, and killed if it has not exited 10 s
// later.
func Child(t testing.TB, env []string, stderr io.Writer, args ...string) (stdin io.WriteCloser, stdout io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return stdin, stdout
}
