package admission

import (
	"net/netip"
	"testing"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/tokenbucket"
)

func TestLimitKey(t *testing.T) {
	tests := []struct {
		give   string
		prefix int
		want   string
	}{
		{"192.0.2.1", 64, "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8::1", 128, "2001:db8::1"},
		{"fe80::1%eth0", 128, "fe80::1"},
		{"fe80::1%eth0", 64, "fe80::/64"},
	}
	for _, tt := range tests {
		if got := LimitKey(netip.MustParseAddr(tt.give), tt.prefix); got != tt.want {
			t.Errorf("LimitKey(%s, %d) = %s, want %s", tt.give, tt.prefix, got, tt.want)
		}
	}
	if got := LimitKey(netip.Addr{}, 64); got != "" {
		t.Errorf("invalid address: %q", got)
	}
}

// TestUnknownChannelTakesTheDefaultBudget: a request without X-Channel, or naming a channel that
// is not configured, takes limits.channels.default when configured, so inventing a channel
// name is no way around the channel budgets.
func TestUnknownChannelTakesTheDefaultBudget(t *testing.T) {
	web := tokenbucket.Limit{Rate: 10, Burst: 20}
	def := tokenbucket.Limit{Rate: 1, Burst: 2}
	tests := []struct {
		name     string
		channels map[string]tokenbucket.Limit
		give     string
		wantName string
		want     tokenbucket.Limit
	}{
		{name: "configured channel", channels: map[string]tokenbucket.Limit{"web": web, "default": def}, give: "web", wantName: "web", want: web},
		{name: "unknown channel", channels: map[string]tokenbucket.Limit{"web": web, "default": def}, give: "zzz", wantName: "default", want: def},
		{name: "no channel", channels: map[string]tokenbucket.Limit{"web": web, "default": def}, give: "", wantName: "default", want: def},
		{name: "unknown channel, no default", channels: map[string]tokenbucket.Limit{"web": web}, give: "zzz", wantName: "", want: tokenbucket.Limit{}},
		{name: "no channel, no default", channels: map[string]tokenbucket.Limit{"web": web}, give: "", wantName: "", want: tokenbucket.Limit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Limits.Channels = tt.channels
			r := NewPolicy(cfg).limiterRequest("a", "", tt.give, "127.0.0.1", "uh")
			if r.ChannelName != tt.wantName || r.Channel != tt.want {
				t.Fatalf("channel %q -> %q %+v, want %q %+v", tt.give, r.ChannelName, r.Channel, tt.wantName, tt.want)
			}
		})
	}
}

// TestPolicyResolvesOverrides: the activity and campaign overrides replace the defaults, and a
// request without a campaign takes no campaign budget.
func TestPolicyResolvesOverrides(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.Activity = tokenbucket.Limit{Rate: 100, Burst: 10}
	cfg.Limits.Campaign = tokenbucket.Limit{Rate: 200, Burst: 20}
	own := tokenbucket.Limit{Rate: 5, Burst: 1}
	cfg.Activities = map[string]config.Activity{"hot": {Limits: &own}}
	cfg.Campaigns = map[string]config.Campaign{"spring": {Limits: &own}}
	p := NewPolicy(cfg)
	tests := []struct {
		activity, campaign string
		wantActivity       tokenbucket.Limit
		wantCampaign       tokenbucket.Limit
	}{
		{"hot", "spring", own, own},
		{"cold", "autumn", cfg.Limits.Activity, cfg.Limits.Campaign},
		{"cold", "", cfg.Limits.Activity, tokenbucket.Limit{}},
	}
	for _, tt := range tests {
		r := p.limiterRequest(tt.activity, tt.campaign, "", "", "")
		if r.Activity != tt.wantActivity || r.Campaign != tt.wantCampaign {
			t.Errorf("%s/%s: activity %+v campaign %+v, want %+v %+v", tt.activity, tt.campaign,
				r.Activity, r.Campaign, tt.wantActivity, tt.wantCampaign)
		}
	}
}
