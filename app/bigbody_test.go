package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An ordinary client that sends a body over the limit reads the 413 with the JSON error model
// instead of a connection reset: the server reads a body of up to drainMax (1 MiB and more)
// before it answers, so it never closes a connection with the body still arriving. Both a body
// with a Content-Length and a chunked one (the limit found while reading); each twice, and the
// connection is kept for the next request.
func TestBigBodyGets413(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "big")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	body := `{"token":"` + strings.Repeat("a", 1<<20) + `"}`
	client := &http.Client{Timeout: 10 * time.Second}
	for _, chunked := range []bool{false, true} {
		for i := 0; i < 2; i++ {
			var rd io.Reader = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(bytes.NewReader([]byte(body))) // no length known: chunked
			}
			req, err := http.NewRequest("POST", ta.base+"/api/v1/activities/"+id+"/reservations", rd)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-User-Id", "u1")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("chunked %v, try %d: %v (want a 413 read whole)", chunked, i, err)
			}
			var e struct{ Code, Message string }
			err = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || err != nil || e.Code != CodeTooLarge {
				t.Fatalf("chunked %v, try %d: %d %+v %v, want 413 %s", chunked, i, resp.StatusCode, e, err, CodeTooLarge)
			}
		}
	}
}
