package keyspace

import (
	"regexp"
	"strings"
	"testing"
)

func TestValidNameMatchesTheDocumentedForm(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, id := range []string{"", "a", "flash-1001", "A_b-9", strings.Repeat("x", 64), strings.Repeat("x", 65),
		"a.b", "a b", "a:b", "{a}", "é", "a\n", "a/b", "-", "_"} {
		if got, want := ValidName(id), re.MatchString(id); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestNamespaced(t *testing.T) {
	if got := Namespaced("", Instances); got != "sk:instances" {
		t.Errorf("default namespace: %q", got)
	}
	if got := Namespaced("t1", Instances); got != "sk:instances:t1" {
		t.Errorf("namespace t1: %q", got)
	}
}

func TestInstanceWideNamesAreTheDocumentedOnes(t *testing.T) {
	for got, want := range map[string]string{Journals: "sk:journals", Activities: "sk:activities", Instances: "sk:instances", Events: "sk:events"} {
		if got != want {
			t.Errorf("%q, want %q (docs/DESIGN.md)", got, want)
		}
	}
}
