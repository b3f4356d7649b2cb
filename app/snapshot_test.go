package app

import (
	"os"
	"testing"
)

// GET /admin/v1/config says when the last refusal happened and whether a later edit
// superseded it; an empty edit is refused and does not lift a kill switch.
func TestAdminConfigLastErrorAt(t *testing.T) {
	ta := startApp(t, Options{}, testConfig+"killSwitch: true\n")
	ta.setConfig(t, "limits: {user: {rate: -1, burst: 1}}\n")
	a := ta.admin(t, "GET", "/admin/v1/config", "")
	if a.body["lastError"] == nil || a.body["lastErrorAt"] == nil || a.body["lastErrorSuperseded"] != false {
		t.Fatalf("after a refused edit: %v", a.body)
	}
	errAt := a.body["lastErrorAt"]

	ta.setConfig(t, testConfig+"killSwitch: true\nactivities: {x: {canaryRatio: 0.5}}\n")
	a = ta.admin(t, "GET", "/admin/v1/config", "")
	if a.body["lastErrorAt"] != errAt || a.body["lastErrorSuperseded"] != true || a.body["lastError"] == nil {
		t.Fatalf("after a later good edit: %v", a.body)
	}

	// An editor that truncates the file and stops there.
	if err := os.WriteFile(ta.cfgPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ta.setConfig(t, "  \n")
	st := ta.cfg.Status()
	if st.Config == nil || !st.Config.KillSwitch || st.LastErrorSuperseded {
		t.Fatalf("an empty edit changed the running config: %+v", st)
	}
}
