package config

import "testing"

// TestLoadtestConfigIsValidAndGenerous: the load-run config decodes strictly and lets one
// address send far more than the default per-IP limit.
func TestLoadtestConfigIsValidAndGenerous(t *testing.T) {
	cfg := decodeFile(t, "loadtest.yaml")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config/loadtest.yaml: %v", err)
	}
	def, err := Decode(DefaultYAML())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.IP.Rate < 1000*def.Limits.IP.Rate {
		t.Fatalf("loadtest ip rate %v, want far above the default %v", cfg.Limits.IP.Rate, def.Limits.IP.Rate)
	}
}
