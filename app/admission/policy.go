package admission

import (
	"net/netip"
	"time"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/limiter"
)

// DefaultChannel is the entry of limits.channels that budgets requests without a configured
// channel (no X-Channel, or an unknown one).
const DefaultChannel = "default"

// Policy is the admission part of one configuration snapshot: every limit resolved once, when
// the snapshot is built (NewPolicy), so a request only looks its names up. Read-only after
// NewPolicy; safe for concurrent use.
type Policy struct {
	cfg *config.Config

	global, ip         tokenbucket.Limit
	activity, campaign tokenbucket.Limit            // the defaults
	activities         map[string]tokenbucket.Limit // per-activity overrides
	campaigns          map[string]tokenbucket.Limit // per-campaign overrides
	channels           map[string]tokenbucket.Limit
	fallback           limiter.Fallback

	// The per-user limits of the reservation script, and the per-IP bucket when the script
	// takes the IP token (see Gate.ipInReservation).
	userRate, ipRate tokenbucket.Limit
	window           time.Duration
	windowMax        int

	// The per-instance budgets of token requests and reads, and the IPv6 prefix of IP keys.
	tokens, reads tokenbucket.Limit
	ipv6Prefix    int
}

// NewPolicy resolves the limits of cfg. It does no I/O and keeps cfg (read-only) for the
// kill switches, the blacklist and the canary.
// Fallback is the limiter's fallback policy of this configuration.
func (p *Policy) Fallback() limiter.Fallback { return p.fallback }

func NewPolicy(cfg *config.Config) *Policy {
	l := cfg.Limits
	p := &Policy{
		cfg:      cfg,
		global:   l.Global,
		ip:       l.IP,
		activity: l.Activity,
		campaign: l.Campaign,
		fallback: limiter.Fallback{
			RedisSlow:          time.Duration(cfg.Fallback.RedisSlowMs) * time.Millisecond,
			SlowCallsToDegrade: cfg.Fallback.SlowCallsToDegrade,
			ProbeEvery:         cfg.Fallback.ProbeEvery.D(),
			Global:             cfg.Fallback.Global,
		},
		userRate:   l.User,
		ipRate:     l.IP,
		window:     l.UserWindow.Window.D(),
		windowMax:  l.UserWindow.Max,
		tokens:     l.Tokens,
		reads:      l.Reads,
		ipv6Prefix: l.IPv6Prefix,
	}
	for id, a := range cfg.Activities {
		if a.Limits != nil {
			if p.activities == nil {
				p.activities = make(map[string]tokenbucket.Limit)
			}
			p.activities[id] = *a.Limits
		}
	}
	for id, k := range cfg.Campaigns {
		if k.Limits != nil {
			if p.campaigns == nil {
				p.campaigns = make(map[string]tokenbucket.Limit)
			}
			p.campaigns[id] = *k.Limits
		}
	}
	if len(l.Channels) > 0 {
		p.channels = make(map[string]tokenbucket.Limit, len(l.Channels))
		for name, cl := range l.Channels {
			p.channels[name] = cl
		}
	}
	return p
}

// Config is the configuration the Policy was built from.
func (p *Policy) Config() *config.Config { return p.cfg }

// limiterRequest is the limiter's request for one reservation: the thresholds of every
// dimension, as values, and the names they apply to (ipKey: Gate.ipKey).
func (p *Policy) limiterRequest(activityID, campaignID, channel, ipKey, user string) limiter.Request {
	r := limiter.Request{
		Global:     p.global,
		Activity:   p.activity,
		IP:         p.ip,
		ActivityID: activityID,
		CampaignID: campaignID,
		IPKey:      ipKey,
		UserKey:    user,
		Fallback:   p.fallback,
		Version:    p.cfg.Version(),
	}
	if l, ok := p.activities[activityID]; ok {
		r.Activity = l
	}
	if campaignID != "" {
		r.Campaign = p.campaign
		if l, ok := p.campaigns[campaignID]; ok {
			r.Campaign = l
		}
	}
	// A request of a configured channel takes that channel's budget. One with no X-Channel, or
	// one naming a channel that is not configured, takes the budget of the channel named
	// DefaultChannel when the operator configured one (else no channel budget): naming an
	// unknown channel must not be a way around the channel budgets.
	if l, ok := p.channels[channel]; channel != "" && ok {
		r.ChannelName, r.Channel = channel, l
	} else if l, ok := p.channels[DefaultChannel]; ok {
		r.ChannelName, r.Channel = DefaultChannel, l
	}
	return r
}

// LimitKey is the per-IP limit key of addr: the address itself for IPv4, its prefix of
// prefixLen bits for IPv6 (one subscriber usually holds a whole /64), without a zone; "" for
// an invalid address.
func LimitKey(addr netip.Addr, prefixLen int) string {
	if !addr.IsValid() {
		return ""
	}
	var b [64]byte
	return string(limiter.AppendLimitKey(b[:0], addr, prefixLen))
}
