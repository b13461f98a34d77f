package qstashsim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestSignatureFormat(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_770_000_000, 0)
	body := []byte(`{"eventId":"1"}`)
	tok := Sign("sig_key", NewClaims("https://example.com/qstash/hubspot", body, now, "jwt_1"))
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if string(h) != `{"alg":"HS256","typ":"JWT"}` {
		t.Fatalf("header %s", h)
	}
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	want := `{"iss":"Upstash","sub":"https://example.com/qstash/hubspot","exp":1770000300,"nbf":1770000000,"iat":1770000000,"jti":"jwt_1","body":"` + BodyHash(body) + `"}`
	if string(p) != want {
		t.Fatalf("payload %s\nwant    %s", p, want)
	}
	// The HMAC is over header.payload with the key's UTF-8 bytes, not a
	// base64 decoding of it.
	mac := hmac.New(sha256.New, []byte("sig_key"))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if parts[2] != base64.RawURLEncoding.EncodeToString(mac.Sum(nil)) {
		t.Fatal("signature is not HMAC-SHA256 of the key's bytes")
	}
	sum := sha256.Sum256(body)
	if BodyHash(body) != base64.URLEncoding.EncodeToString(sum[:]) || !strings.HasSuffix(BodyHash(body), "=") {
		t.Fatalf("body hash %q", BodyHash(body))
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_770_000_000, 0)
	url, body := "https://example.com/w", []byte("b")
	good := Sign("k1", NewClaims(url, body, now, "j"))
	if _, err := Verify(good, []string{"k0", "k1"}, url, body, now, 0); err != nil {
		t.Fatalf("good token: %v", err)
	}
	// The body claim compares with the padding stripped on both sides.
	c := NewClaims(url, body, now, "j")
	c.Body = strings.TrimRight(c.Body, "=")
	if _, err := Verify(Sign("k1", c), []string{"k1"}, url, body, now, 0); err != nil {
		t.Fatalf("unpadded body claim: %v", err)
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + strings.Split(good, ".")[1] + "."
	wrongIss := NewClaims(url, body, now, "j")
	wrongIss.Iss = "Someone"
	for name, tc := range map[string]struct {
		tok  string
		keys []string
		url  string
		body []byte
		now  time.Time
	}{
		"wrong key":     {good, []string{"k2"}, url, body, now},
		"no key":        {good, nil, url, body, now},
		"alg none":      {none, []string{"k1"}, url, body, now},
		"garbage":       {"a.b", []string{"k1"}, url, body, now},
		"bad base64":    {"!!.!!.!!", []string{"k1"}, url, body, now},
		"wrong sub":     {good, []string{"k1"}, url + "x", body, now},
		"tampered body": {good, []string{"k1"}, url, []byte("c"), now},
		"expired":       {good, []string{"k1"}, url, body, now.Add(SignatureTTL + time.Second)},
		"not yet":       {good, []string{"k1"}, url, body, now.Add(-time.Second)},
		"wrong iss":     {Sign("k1", wrongIss), []string{"k1"}, url, body, now},
	} {
		if _, err := Verify(tc.tok, tc.keys, tc.url, tc.body, tc.now, 0); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}
