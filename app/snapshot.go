package app

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/config"
)

// Snapshot is everything a request needs from the configuration, built once per reload and
// swapped atomically by the config.Reloader. A request loads it once and uses only that
// value, so it never sees half of an old and half of a new configuration.
type Snapshot struct {
	Cfg  *config.Config
	Meta config.Meta
	// Admission is the admission step's view of Cfg, its limits resolved once.
	Admission *admission.Policy

	auth authenticator
}

// authenticator verifies the identity of a storefront request's bearer JWT.
type authenticator struct {
	mode     string
	hsSecret []byte
	rsKey    *rsa.PublicKey
	parser   *jwt.Parser
	leeway   time.Duration
	maxAge   time.Duration // bound of exp - now and now - iat (each plus leeway)
}

// authKeys is the JWT key material, fixed at start-up: a configuration edit chooses the mode
// but can never name a file or an environment variable to read.
type authKeys struct {
	hsSecret []byte
	rsKey    *rsa.PublicKey
}

// Bounds of the start-up key material.
const (
	minHS256SecretBytes = 32 // RFC 7518 section 3.2: a key of at least the hash size
	maxKeyFileBytes     = 64 << 10
)

// loadAuthKeys reads the key material named by the start-up options.
func loadAuthKeys(o Options) (authKeys, error) {
	var k authKeys
	switch {
	case o.JWTHS256Secret != "" && o.JWTRS256PublicKeyFile != "":
		return k, fmt.Errorf("auth: give one of SECKILL_JWT_HS256_SECRET and --jwt-rs256-public-key-file, not both")
	case o.JWTHS256Secret != "":
		if len(o.JWTHS256Secret) < minHS256SecretBytes {
			return k, fmt.Errorf("auth: SECKILL_JWT_HS256_SECRET must hold at least %d bytes", minHS256SecretBytes)
		}
		k.hsSecret = []byte(o.JWTHS256Secret)
	case o.JWTRS256PublicKeyFile != "":
		pem, err := config.ReadRegularFile(o.JWTRS256PublicKeyFile, maxKeyFileBytes)
		if err != nil {
			return k, fmt.Errorf("auth: jwt-rs256-public-key-file: %w", err)
		}
		key, err := jwt.ParseRSAPublicKeyFromPEM(pem)
		if err != nil {
			return k, fmt.Errorf("auth: jwt-rs256-public-key-file %s: %w", o.JWTRS256PublicKeyFile, err)
		}
		k.rsKey = key
	}
	return k, nil
}

// buildSnapshot is the config.Reloader's build step: everything that can fail fails here,
// so a bad edit is refused as a whole. It does no I/O.
func (k authKeys) buildSnapshot(cfg *config.Config, meta config.Meta) (*Snapshot, error) {
	if err := cfg.AuthChosen(); err != nil {
		return nil, err
	}
	s := &Snapshot{Cfg: cfg, Meta: meta, Admission: admission.NewPolicy(cfg), auth: authenticator{mode: cfg.Auth.Mode}}
	if cfg.Auth.Mode != config.AuthJWT {
		return s, nil
	}
	s.auth.leeway, s.auth.maxAge = cfg.Auth.Leeway.D(), cfg.Auth.MaxTokenAge.D()
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(s.auth.leeway)}
	switch {
	case k.hsSecret != nil:
		s.auth.hsSecret = k.hsSecret
		opts = append(opts, jwt.WithValidMethods([]string{"HS256"}))
	case k.rsKey != nil:
		s.auth.rsKey = k.rsKey
		opts = append(opts, jwt.WithValidMethods([]string{"RS256"}))
	default:
		return nil, fmt.Errorf("auth: mode jwt needs a key given at start-up (SECKILL_JWT_HS256_SECRET or --jwt-rs256-public-key-file)")
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

// errCritical refuses a JWT with a crit header.
var errCritical = errors.New("jwt: crit header names extensions this service does not understand")

// verify returns the subject of a valid token, or false.
func (a *authenticator) verify(token string) (string, bool) {
	claims := jwt.RegisteredClaims{}
	_, err := a.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			// RFC 7515 section 4.1.11: this service understands no extension, so a token
			// that marks one critical is refused.
			return nil, errCritical
		}
		if a.rsKey != nil {
			return a.rsKey, nil
		}
		return a.hsSecret, nil
	})
	if err != nil || !config.ValidUserID(claims.Subject) {
		return "", false
	}
	// exp is required and iat, when present, is not in the future (the parser checked both):
	// bound the token's life, so a token minted for 100 years is refused.
	now := time.Now()
	if claims.ExpiresAt.After(now.Add(a.maxAge + a.leeway)) {
		return "", false
	}
	if claims.IssuedAt != nil && claims.IssuedAt.Before(now.Add(-a.maxAge-a.leeway)) {
		return "", false
	}
	return claims.Subject, true
}

// bearerToken returns the token of an Authorization header of the Bearer scheme, whose name
// is case-insensitive (RFC 9110 section 11.1).
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}
