package app

import (
	"net/http"
	"testing"
	"time"
)

// The admin API lists activities from the database in id order, a page at a time, shows one
// as Redis holds it, and refuses a bad page size; pprof answers only with the admin token.
func TestAdminActivityListGetAndPprof(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	for _, id := range []string{"b-2", "a-1", "c-3"} {
		ta.createActivity(t, id, 10, 1, 2, time.Now().Add(-time.Second))
	}
	page := ta.admin(t, "GET", "/admin/v1/activities?limit=2", "")
	list, _ := page.body["activities"].([]any)
	if page.status != http.StatusOK || len(list) != 2 || list[0].(map[string]any)["activityId"] != "a-1" ||
		list[1].(map[string]any)["activityId"] != "b-2" || page.body["next"] != "b-2" {
		t.Fatalf("first page: %d %v", page.status, page.body)
	}
	last := ta.admin(t, "GET", "/admin/v1/activities?limit=2&after=b-2", "")
	list, _ = last.body["activities"].([]any)
	if last.status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["activityId"] != "c-3" || last.body["next"] != nil {
		t.Fatalf("last page: %d %v", last.status, last.body)
	}
	if got := list[0].(map[string]any); got["stock"] != 10.0 || got["perUserLimit"] != 1.0 || got["shards"] != 2.0 {
		t.Errorf("listed %v", got)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=bad%20id"} {
		if a := ta.admin(t, "GET", "/admin/v1/activities?"+q, ""); a.status != http.StatusBadRequest || a.body["code"] != "BAD_REQUEST" {
			t.Errorf("?%s: %d %v, want 400 BAD_REQUEST", q, a.status, a.body)
		}
	}
	one := ta.admin(t, "GET", "/admin/v1/activities/a-1", "")
	if one.status != http.StatusOK || one.body["activityId"] != "a-1" || one.body["stock"] != 10.0 || one.body["remaining"] != 10.0 || one.body["soldOut"] != false {
		t.Fatalf("GET one: %d %v", one.status, one.body)
	}
	if a := ta.admin(t, "GET", "/admin/v1/activities/nope", ""); a.status != http.StatusNotFound {
		t.Errorf("unknown activity: %d %v", a.status, a.body)
	}
	if a := ta.do(t, "GET", "/admin/v1/activities", nil, ""); a.status != http.StatusUnauthorized {
		t.Errorf("list without the token: %d", a.status)
	}

	get := func(auth string) (int, string) { return ta.page(t, "/debug/pprof/goroutine?debug=1", auth) }
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("pprof without the token: %d, want 401", code)
	}
	if code, body := get(testAdminToken); code != http.StatusOK || len(body) < 100 {
		t.Errorf("pprof with the token: %d %q", code, body)
	}
	if a := ta.do(t, "GET", "/debug/pprof/", nil, ""); a.status != http.StatusNotFound {
		t.Errorf("pprof on the storefront: %d, want 404", a.status)
	}
}
