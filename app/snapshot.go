package app

import (
	"crypto/rsa"
	"fmt"
	"os"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/limiter"
)

// Snapshot is everything a request needs from the configuration, built once per reload and
// swapped atomically by the config.Reloader. A request loads it once and uses only that
// value, so it never sees half of an old and half of a new configuration.
type Snapshot struct {
	Cfg  *config.Config
	Meta config.Meta

	auth authenticator
}

// authenticator verifies the identity of a storefront request's bearer JWT.
type authenticator struct {
	mode     string
	hsSecret []byte
	rsKey    *rsa.PublicKey
	parser   *jwt.Parser
}

// buildSnapshot is the config.Reloader's build step: everything that can fail (reading the
// JWT secret or key) fails here, so a bad edit is refused as a whole.
func buildSnapshot(cfg *config.Config, meta config.Meta) (*Snapshot, error) {
	s := &Snapshot{Cfg: cfg, Meta: meta, auth: authenticator{mode: cfg.Auth.Mode}}
	if cfg.Auth.Mode != config.AuthJWT {
		return s, nil
	}
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithLeeway(cfg.Auth.Leeway.D())}
	switch {
	case cfg.Auth.JWTHS256SecretEnv != "":
		secret := os.Getenv(cfg.Auth.JWTHS256SecretEnv)
		if len(secret) < 16 {
			return nil, fmt.Errorf("auth: environment variable %s must hold an HS256 secret of at least 16 bytes", cfg.Auth.JWTHS256SecretEnv)
		}
		s.auth.hsSecret = []byte(secret)
		opts = append(opts, jwt.WithValidMethods([]string{"HS256"}))
	case cfg.Auth.JWTRS256PublicKeyFile != "":
		pem, err := os.ReadFile(cfg.Auth.JWTRS256PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		key, err := jwt.ParseRSAPublicKeyFromPEM(pem)
		if err != nil {
			return nil, fmt.Errorf("auth: %s: %w", cfg.Auth.JWTRS256PublicKeyFile, err)
		}
		s.auth.rsKey = key
		opts = append(opts, jwt.WithValidMethods([]string{"RS256"}))
	default:
		return nil, fmt.Errorf("auth: jwt mode needs jwtHS256SecretEnv or jwtRS256PublicKeyFile")
	}
	if cfg.Auth.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Auth.Issuer))
	}
	if cfg.Auth.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Auth.Audience))
	}
	s.auth.parser = jwt.NewParser(opts...)
	return s, nil
}

// verify returns the subject of a valid token, or false.
func (a *authenticator) verify(token string) (string, bool) {
	claims := jwt.RegisteredClaims{}
	_, err := a.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		if a.rsKey != nil {
			return a.rsKey, nil
		}
		return a.hsSecret, nil
	})
	if err != nil || !config.ValidUserID(claims.Subject) {
		return "", false
	}
	return claims.Subject, true
}

func toLimit(l config.Limit) limiter.Limit { return limiter.Limit{Rate: l.Rate, Burst: l.Burst} }

// limiterRequest assembles the thresholds of every dimension for one reservation, as values.
func (s *Snapshot) limiterRequest(activityID, campaignID, channel, ip, userHash string) limiter.Request {
	c := s.Cfg
	r := limiter.Request{
		Global:      toLimit(c.Limits.Global),
		Activity:    toLimit(c.ActivityLimit(activityID)),
		IP:          toLimit(c.Limits.IP),
		ActivityID:  activityID,
		CampaignID:  campaignID,
		ChannelName: channel,
		IPAddr:      ip,
		UserHash:    userHash,
		Fallback: limiter.Fallback{
			RedisSlow:          msDuration(c.Fallback.RedisSlowMs),
			SlowCallsToDegrade: c.Fallback.SlowCallsToDegrade,
			ProbeEvery:         c.Fallback.ProbeEvery.D(),
			Global:             toLimit(c.Fallback.Global),
		},
	}
	if campaignID != "" {
		r.Campaign = toLimit(c.CampaignLimit(campaignID))
	}
	if channel != "" {
		if l, ok := c.ChannelLimit(channel); ok {
			r.Channel = toLimit(l)
		}
	}
	return r
}
