package inventory

import (
	"testing"
	"time"
)

func TestParseDurability(t *testing.T) {
	tests := []struct {
		give    string
		want    Durability
		wantErr bool
	}{
		{give: "none", want: Durability{}},
		{give: "aof", want: Durability{AOF: true}},
		{give: "replicas:1", want: Durability{Replicas: 1}},
		{give: "aof+replicas:3", want: Durability{AOF: true, Replicas: 3}},
		{give: "replicas:2+aof", want: Durability{AOF: true, Replicas: 2}},
		{give: "", wantErr: true},
		{give: "aof+aof", wantErr: true},
		{give: "replicas:0", wantErr: true},
		{give: "replicas:17", wantErr: true},
		{give: "replicas:x", wantErr: true},
		{give: "none+aof", wantErr: true},
		{give: "AOF", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseDurability(tt.give)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseDurability(%q) = %+v, %v; want %+v, error %v", tt.give, got, err, tt.want, tt.wantErr)
		}
		if err == nil {
			if again, err := ParseDurability(got.String()); err != nil || again != got {
				t.Errorf("ParseDurability(%q.String() = %q) = %+v, %v", tt.give, got.String(), again, err)
			}
		}
	}
}

func FuzzParseDurability(f *testing.F) {
	for _, s := range []string{"none", "aof", "replicas:1", "aof+replicas:2", "", "replicas:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDurability(s)
		if err != nil {
			return
		}
		if d.Replicas < 0 || d.Replicas > 16 {
			t.Fatalf("%q: replicas %d", s, d.Replicas)
		}
		again, err := ParseDurability(d.String())
		if err != nil || again != d {
			t.Fatalf("%q -> %q -> %+v, %v", s, d.String(), again, err)
		}
	})
}

func TestFsyncHorizon(t *testing.T) {
	always := []MasterDurability{{AOF: true, Fsync: "always"}, {AOF: true, Fsync: "always"}}
	mixed := []MasterDurability{{AOF: true, Fsync: "always"}, {AOF: true, Fsync: "everysec"}}
	unknown := []MasterDurability{{AOF: true, Fsync: ""}}
	for _, tt := range []struct {
		name string
		d    Durability
		ms   []MasterDurability
		want time.Duration
	}{
		{"none", Durability{}, mixed, 0},
		{"replicas only", Durability{Replicas: 1}, mixed, 0},
		{"always everywhere", Durability{AOF: true}, always, 0},
		{"one everysec", Durability{AOF: true}, mixed, EverysecHorizon},
		{"fsync unknown", Durability{AOF: true}, unknown, EverysecHorizon},
	} {
		if got := FsyncHorizon(tt.d, tt.ms); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
