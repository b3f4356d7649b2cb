package app

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// The demo's banner is pasted into a shell as it is: its command lines, run one after the
// other by sh, reserve for alice and read the reservation back (no placeholder to fill in).
func TestBannerCommandsRunAsPasted(t *testing.T) {
	ta := startApp(t, Options{ConfigFile: "../config/seckill.yaml", Demo: true}, "")
	testwait.Eventually(t, 10*time.Second, func() bool {
		return ta.do(t, "GET", "/api/v1/activities/demo", nil, "").status == 200
	}, "demo activity readable")
	var script []string
	for _, l := range strings.Split(ta.banner(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "curl ") || strings.HasPrefix(l, "rid=") {
			script = append(script, l+"; echo")
		}
	}
	if len(script) < 4 {
		t.Fatalf("banner has %d command lines:\n%s", len(script), ta.banner())
	}
	out, err := exec.Command("sh", "-ec", "export SECKILL_ADMIN_TOKEN="+ta.AdminToken()+"\n"+strings.Join(script, "\n")).CombinedOutput()
	if err != nil {
		t.Fatalf("the banner's commands: %v\n%s", err, out)
	}
	// The POST's answer, then (the rid line prints an empty one) the GET of the same id.
	var posted, read string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, `"reservationId":"demo.`) {
			if strings.Contains(l, `"orderId"`) {
				read = l
			} else if posted == "" {
				posted = l
			}
		}
	}
	id := func(l string) string {
		_, rest, _ := strings.Cut(l, `"reservationId":"`)
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	if posted == "" || read == "" || id(posted) != id(read) {
		t.Fatalf("the banner's commands printed:\n%s\nwant the reservation, then the same reservation read back by its id", out)
	}
}
