package qstashsim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SignatureTTL is how long a delivery's Upstash-Signature stays valid (its
// exp claim), as QStash signs.
const SignatureTTL = 5 * time.Minute

// Issuer is the iss claim of every signature.
const Issuer = "Upstash"

// Claims are the JWT claims of an Upstash-Signature.
type Claims struct {
	// Iss is always "Upstash".
	Iss string `json:"iss"`
	// Sub is the destination URL exactly as it was published.
	Sub string `json:"sub"`
	// Exp, Nbf and Iat are Unix seconds.
	Exp int64 `json:"exp"`
	Nbf int64 `json:"nbf"`
	Iat int64 `json:"iat"`
	// Jti is a unique id of this signature.
	Jti string `json:"jti"`
	// Body is BodyHash of the delivered body.
	Body string `json:"body"`
}

// BodyHash is the body claim: base64url(SHA-256(body)), with the "=" padding
// QStash writes; receivers compare it with the padding stripped on both sides.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.URLEncoding.EncodeToString(sum[:])
}

// NewClaims returns the claims QStash puts in the signature of a delivery of
// body to sub at now.
func NewClaims(sub string, body []byte, now time.Time, jti string) Claims {
	return Claims{
		Iss: Issuer, Sub: sub,
		Exp: now.Add(SignatureTTL).Unix(), Nbf: now.Unix(), Iat: now.Unix(),
		Jti: jti, Body: BodyHash(body),
	}
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// Sign returns the compact JWT (HS256) of c, keyed with the UTF-8 bytes of
// the signing key ("sig_…"), as the Upstash-Signature header carries it.
func Sign(key string, c Claims) string {
	payload, err := json.Marshal(c)
	if err != nil {
		// Claims holds only strings and integers.
		panic(fmt.Sprintf("qstashsim: encode claims: %v", err))
	}
	signed := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// ErrSignature is returned by Verify for any signature that does not verify.
var ErrSignature = errors.New("qstashsim: invalid signature")

// Verify checks a signature as a QStash receiver must: HS256 only, HMAC with
// each key in turn (current, then next), iss, exp and nbf within leeway of
// now, sub equal to url, and the body hash. It exists for this package's
// tests and the demo's sanity checks; hubsync's own verifier lives in package
// qstash.
func Verify(token string, keys []string, url string, body []byte, now time.Time, leeway time.Duration) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, fmt.Errorf("%w: not a compact JWT", ErrSignature)
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return Claims{}, fmt.Errorf("%w: header: %v", ErrSignature, err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(hb, &h); err != nil || h.Alg != "HS256" {
		return Claims{}, fmt.Errorf("%w: alg must be HS256", ErrSignature)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Claims{}, fmt.Errorf("%w: signature encoding: %v", ErrSignature, err)
	}
	ok := false
	for _, k := range keys {
		if k == "" {
			continue
		}
		mac := hmac.New(sha256.New, []byte(k))
		mac.Write([]byte(parts[0] + "." + parts[1]))
		if hmac.Equal(mac.Sum(nil), sig) {
			ok = true
			break
		}
	}
	if !ok {
		return Claims{}, fmt.Errorf("%w: no key matches", ErrSignature)
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrSignature, err)
	}
	var c Claims
	if err := json.Unmarshal(pb, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrSignature, err)
	}
	switch {
	case c.Iss != Issuer:
		return c, fmt.Errorf("%w: iss %q", ErrSignature, c.Iss)
	case now.After(time.Unix(c.Exp, 0).Add(leeway)):
		return c, fmt.Errorf("%w: expired", ErrSignature)
	case now.Before(time.Unix(c.Nbf, 0).Add(-leeway)):
		return c, fmt.Errorf("%w: not yet valid", ErrSignature)
	case c.Sub != url:
		return c, fmt.Errorf("%w: sub %q, want %q", ErrSignature, c.Sub, url)
	case strings.TrimRight(c.Body, "=") != strings.TrimRight(BodyHash(body), "="):
		return c, fmt.Errorf("%w: body hash differs", ErrSignature)
	}
	return c, nil
}
