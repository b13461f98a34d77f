package qstash

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// SignatureHeader carries QStash's JWT on every delivery.
const SignatureHeader = "Upstash-Signature"

// Defaults of VerifierConfig.
const (
	// ClockSkewDefault is the tolerance on exp and nbf.
	ClockSkewDefault = 30 * time.Second
	// MaxTokenBytes bounds the header a verifier parses.
	MaxTokenBytes = 4096
)

// Issuer is the iss claim of QStash's signatures.
const Issuer = "Upstash"

// ErrSignature is wrapped by every verification failure.
var ErrSignature = errors.New("qstash: invalid signature")

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// CurrentSigningKey and NextSigningKey are QStash's current and next
	// signing keys; the current one is required. The key is the
	// string's bytes, not decoded.
	CurrentSigningKey string
	NextSigningKey    string
	// URL is the destination exactly as published (the worker's public URL):
	// the sub claim must equal it. It is never rebuilt from the request.
	URL string
	// ClockSkew is the tolerance on exp and nbf; default ClockSkewDefault.
	ClockSkew time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Verifier checks Upstash-Signature headers.
type Verifier struct {
	keys [][]byte
	url  string
	skew time.Duration
	now  func() time.Time
}

// NewVerifier validates cfg and returns a Verifier.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if cfg.CurrentSigningKey == "" {
		return nil, errors.New("qstash: VerifierConfig.CurrentSigningKey is empty; set it to QStash's current signing key")
	}
	if cfg.URL == "" {
		return nil, errors.New("qstash: VerifierConfig.URL is empty; set it to the worker URL QStash calls")
	}
	if cfg.ClockSkew < 0 {
		return nil, errors.New("qstash: VerifierConfig.ClockSkew is negative")
	}
	v := &Verifier{url: cfg.URL, skew: cfg.ClockSkew, now: cfg.Now}
	if v.skew == 0 {
		v.skew = ClockSkewDefault
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.keys = append(v.keys, []byte(cfg.CurrentSigningKey))
	if cfg.NextSigningKey != "" {
		v.keys = append(v.keys, []byte(cfg.NextSigningKey))
	}
	return v, nil
}

// Claims are the claims of a QStash signature hubsync checks.
type Claims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	ExpiresAt int64  `json:"exp"`
	NotBefore int64  `json:"nbf"`
	IssuedAt  int64  `json:"iat"`
	ID        string `json:"jti"`
	Body      string `json:"body"`
}

// VerifyRequest checks r's Upstash-Signature against body, r's raw body.
func (v *Verifier) VerifyRequest(r *http.Request, body []byte) (Claims, error) {
	hs := r.Header.Values(SignatureHeader)
	if len(hs) != 1 {
		return Claims{}, fmt.Errorf("%w: want one %s header, got %d", ErrSignature, SignatureHeader, len(hs))
	}
	return v.Verify(hs[0], body)
}

// Verify checks a signature token against the raw body: the token must be an
// HS256 JWT signed with the current or the next key, issued by Upstash for
// the configured URL, within its validity (± ClockSkew), and its body claim
// must be the base64url SHA-256 of body.
func (v *Verifier) Verify(token string, body []byte) (Claims, error) {
	signed, sig, c, err := ParseToken(token)
	if err != nil {
		return Claims{}, err
	}
	ok := false
	for _, k := range v.keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(signed))
		if hmac.Equal(m.Sum(nil), sig) {
			ok = true
			break
		}
	}
	if !ok {
		return Claims{}, fmt.Errorf("%w: signed by neither signing key", ErrSignature)
	}
	if c.Issuer != Issuer {
		return Claims{}, fmt.Errorf("%w: iss is not %s", ErrSignature, Issuer)
	}
	if subtle.ConstantTimeCompare([]byte(c.Subject), []byte(v.url)) != 1 {
		return Claims{}, fmt.Errorf("%w: sub is not the configured worker URL", ErrSignature)
	}
	now := v.now()
	if c.ExpiresAt == 0 || now.After(time.Unix(c.ExpiresAt, 0).Add(v.skew)) {
		return Claims{}, fmt.Errorf("%w: expired", ErrSignature)
	}
	if c.NotBefore != 0 && now.Add(v.skew).Before(time.Unix(c.NotBefore, 0)) {
		return Claims{}, fmt.Errorf("%w: not valid yet (nbf)", ErrSignature)
	}
	sum := sha256.Sum256(body)
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	got := strings.TrimRight(c.Body, "=")
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return Claims{}, fmt.Errorf("%w: body hash does not match", ErrSignature)
	}
	return c, nil
}

// ParseToken splits a compact JWT and decodes its header and claims. It
// accepts alg HS256 only (never "none"), and returns the signed part
// (header.payload), the signature bytes and the claims. It does not check the
// signature.
func ParseToken(token string) (signed string, sig []byte, c Claims, err error) {
	fail := func(why string) (string, []byte, Claims, error) {
		return "", nil, Claims{}, fmt.Errorf("%w: %s", ErrSignature, why)
	}
	if token == "" {
		return fail("empty token")
	}
	if len(token) > MaxTokenBytes {
		return fail("token too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("not a compact JWT (want 3 parts)")
	}
	hb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[0], "="))
	if err != nil {
		return fail("header is not base64url")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return fail("header is not JSON")
	}
	if hdr.Alg != "HS256" {
		return fail(fmt.Sprintf("alg %q is not HS256", truncate(hdr.Alg, 20)))
	}
	pb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return fail("claims are not base64url")
	}
	if err := json.Unmarshal(pb, &c); err != nil {
		return fail("claims are not a JSON object of the expected types")
	}
	sig, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil || len(sig) != sha256.Size {
		return fail("signature is not a base64url HS256 MAC")
	}
	return parts[0] + "." + parts[1], sig, c, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Sign makes a token as QStash does: HS256 over the claims with key. Tests
// and emulators use it; hubsync itself only verifies.
func Sign(key string, c Claims) string {
	enc := base64.RawURLEncoding
	h := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	p, _ := json.Marshal(c)
	signed := h + "." + enc.EncodeToString(p)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(m.Sum(nil))
}

// BodyHash is the body claim of a signature over body.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
