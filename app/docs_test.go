package app

import (
	"os"
	"strings"
	"testing"

	"github.com/seckill/seckill/config"
)

// yamlBlocks returns the fenced yaml blocks of the markdown section that starts with heading.
func yamlBlocks(t *testing.T, doc []byte, heading string) []string {
	t.Helper()
	s := string(doc)
	i := strings.Index(s, "\n"+heading)
	if i < 0 {
		t.Fatalf("no section %q", heading)
	}
	s = s[i+1:]
	if j := strings.Index(s[len(heading):], "\n## "); j >= 0 {
		s = s[:len(heading)+j]
	}
	var blocks []string
	for {
		a := strings.Index(s, "```yaml\n")
		if a < 0 {
			return blocks
		}
		s = s[a+len("```yaml\n"):]
		b := strings.Index(s, "```")
		if b < 0 {
			t.Fatalf("section %q: unterminated yaml block", heading)
		}
		blocks = append(blocks, s[:b])
		s = s[b+3:]
	}
}

// decodeAndBuild runs a document through the service's decode and snapshot build, with an
// HS256 key given as at start-up (a jwt config needs one).
func decodeAndBuild(t *testing.T, what, doc string) *Snapshot {
	t.Helper()
	cfg, err := config.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("%s does not decode: %v", what, err)
	}
	snap, err := authKeys{hsSecret: []byte(strings.Repeat("k", minHS256SecretBytes))}.buildSnapshot(cfg, config.Meta{})
	if err != nil {
		t.Fatalf("%s does not build: %v", what, err)
	}
	return snap
}

// The configuration example of docs/API.md section 6 is one the service accepts, so the
// contract cannot drift from the code.
func TestAPIDocConfigExampleBuilds(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlocks(t, doc, "## 6. Configuration")
	if len(blocks) != 1 {
		t.Fatalf("docs/API.md section 6: %d yaml blocks, want 1", len(blocks))
	}
	snap := decodeAndBuild(t, "docs/API.md section 6 example", blocks[0])
	if snap.Cfg.Auth.Mode == "" {
		t.Fatalf("the example chooses no identity mode")
	}
}

// The configuration docker/compose.yaml publishes to Nacos is one the service accepts.
func TestComposeNacosConfigBuilds(t *testing.T) {
	doc, err := os.ReadFile("../docker/seckill-nacos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap := decodeAndBuild(t, "docker/seckill-nacos.yaml", string(doc))
	if snap.Cfg.Auth.Mode != config.AuthHeader || !snap.Cfg.Auth.TrustedGateway {
		t.Fatalf("docker/seckill-nacos.yaml auth %+v, want header with trustedGateway (as its comment says)", snap.Cfg.Auth)
	}
}
