package journal

import (
	"testing"

	"github.com/seckill/seckill/inventory"
)

func TestStream(t *testing.T) {
	tests := []struct {
		give   string
		want   inventory.ShardKeys
		wantOK bool
	}{
		{give: inventory.Shard("flash-1001", 0, 3).Journal(), want: inventory.Shard("flash-1001", 0, 3), wantOK: true},
		{give: inventory.Shard("a_b", 12, 15).Journal(), want: inventory.Shard("a_b", 12, 15), wantOK: true},
		{give: inventory.Shard("x", 1, 2).Stats()},
		{give: "sk:{x:1}:journal"},
		{give: "sk:{x:a:1}:journal"},
		{give: "journal"},
	}
	for _, tt := range tests {
		got, ok := Stream(tt.give)
		if ok != tt.wantOK || (ok && got != tt.want) {
			t.Errorf("Stream(%q) = %v, %v; want %v, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
		if IsStream(tt.give) != tt.wantOK {
			t.Errorf("IsStream(%q) = %v", tt.give, !tt.wantOK)
		}
	}
}
