package qstash

import (
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	testCurrent = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"
	testNext    = "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs"
	testURL     = "https://worker.example.com/qstash/hubspot"
)

var testNow = time.Unix(1_800_000_000, 0)

func testVerifier(t testing.TB) *Verifier {
	t.Helper()
	v, err := NewVerifier(VerifierConfig{CurrentSigningKey: testCurrent, NextSigningKey: testNext, URL: testURL,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func claimsFor(body []byte) Claims {
	return Claims{Issuer: Issuer, Subject: testURL, IssuedAt: testNow.Unix(), NotBefore: testNow.Unix(),
		ExpiresAt: testNow.Add(5 * time.Minute).Unix(), ID: "jwt_1", Body: BodyHash(body)}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"eventId":"ev-1"}`)
	enc := base64.RawURLEncoding
	mod := func(f func(*Claims)) Claims { c := claimsFor(body); f(&c); return c }
	noneToken := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		enc.EncodeToString([]byte(`{"iss":"Upstash","sub":"`+testURL+`","exp":1900000000,"body":"`+BodyHash(body)+`"}`)) + "."
	// A token signed with the right key but claiming alg HS512: the header is
	// part of what is signed, so only the alg check can refuse it.
	hs512 := func() string {
		good := Sign(testCurrent, claimsFor(body))
		parts := strings.Split(good, ".")
		parts[0] = enc.EncodeToString([]byte(`{"alg":"HS512","typ":"JWT"}`))
		return strings.Join(parts, ".")
	}()
	cases := []struct {
		name  string
		token string
		body  []byte
		ok    bool
		why   string
	}{
		{"valid current key", Sign(testCurrent, claimsFor(body)), body, true, ""},
		{"valid next key", Sign(testNext, claimsFor(body)), body, true, ""},
		{"padded body claim", Sign(testCurrent, mod(func(c *Claims) { c.Body = base64.URLEncoding.EncodeToString(mustHash(body)) })), body, true, ""},
		{"wrong key", Sign("sig_wrong", claimsFor(body)), body, false, "neither signing key"},
		{"expired", Sign(testCurrent, mod(func(c *Claims) { c.ExpiresAt = testNow.Add(-time.Minute).Unix() })), body, false, "expired"},
		{"no exp", Sign(testCurrent, mod(func(c *Claims) { c.ExpiresAt = 0 })), body, false, "expired"},
		{"expired within skew", Sign(testCurrent, mod(func(c *Claims) { c.ExpiresAt = testNow.Add(-10 * time.Second).Unix() })), body, true, ""},
		{"nbf in future", Sign(testCurrent, mod(func(c *Claims) { c.NotBefore = testNow.Add(time.Minute).Unix() })), body, false, "nbf"},
		{"wrong sub", Sign(testCurrent, mod(func(c *Claims) { c.Subject = testURL + "x" })), body, false, "sub"},
		{"sub of another host", Sign(testCurrent, mod(func(c *Claims) { c.Subject = "https://evil.example.com/qstash/hubspot" })), body, false, "sub"},
		{"wrong iss", Sign(testCurrent, mod(func(c *Claims) { c.Issuer = "Someone" })), body, false, "iss"},
		{"tampered body", Sign(testCurrent, claimsFor(body)), []byte(`{"eventId":"ev-2"}`), false, "body hash"},
		{"missing header", "", body, false, "empty"},
		{"alg none", noneToken, body, false, "alg"},
		{"alg HS512", hs512, body, false, "alg"},
		{"malformed two parts", "abc.def", body, false, "3 parts"},
		{"malformed base64", "###.###.###", body, false, "base64"},
		{"malformed json", enc.EncodeToString([]byte("{")) + ".e30.AA", body, false, "JSON"},
		{"oversized", strings.Repeat("a", MaxTokenBytes+1), body, false, "too long"},
	}
	v := testVerifier(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(tc.token, tc.body)
			if tc.ok {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSignature) {
				t.Fatalf("Verify = %v, want ErrSignature", err)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("Verify = %v, want a reason containing %q", err, tc.why)
			}
		})
	}
}

func mustHash(b []byte) []byte {
	d, _ := base64.RawURLEncoding.DecodeString(BodyHash(b))
	return d
}

func TestVerifyRequestHeader(t *testing.T) {
	v := testVerifier(t)
	body := []byte(`{"eventId":"e"}`)
	r := httptest.NewRequest("POST", "/qstash/hubspot", nil)
	if _, err := v.VerifyRequest(r, body); !errors.Is(err, ErrSignature) {
		t.Fatalf("no header: %v", err)
	}
	r.Header.Add(SignatureHeader, Sign(testCurrent, claimsFor(body)))
	if _, err := v.VerifyRequest(r, body); err != nil {
		t.Fatalf("one header: %v", err)
	}
	r.Header.Add(SignatureHeader, Sign(testCurrent, claimsFor(body)))
	if _, err := v.VerifyRequest(r, body); !errors.Is(err, ErrSignature) {
		t.Fatalf("two headers: %v", err)
	}
}

func TestNewVerifierNeedsKeyAndURL(t *testing.T) {
	if _, err := NewVerifier(VerifierConfig{URL: testURL}); err == nil || !strings.Contains(err.Error(), "CurrentSigningKey") {
		t.Fatalf("no key: %v", err)
	}
	if _, err := NewVerifier(VerifierConfig{CurrentSigningKey: testCurrent}); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Fatalf("no URL: %v", err)
	}
}

// FuzzParseToken: whatever arrives in the header, the parser returns an
// ErrSignature or claims from an HS256 header, never panics, and Verify never
// accepts a token that was not signed with a configured key.
func FuzzParseToken(f *testing.F) {
	body := []byte(`{"eventId":"ev"}`)
	f.Add(Sign(testCurrent, claimsFor(body)))
	f.Add(Sign("other", claimsFor(body)))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("")
	v := testVerifier(f)
	f.Fuzz(func(t *testing.T, token string) {
		_, _, _, err := ParseToken(token)
		if err != nil && !errors.Is(err, ErrSignature) {
			t.Fatalf("ParseToken error %v does not wrap ErrSignature", err)
		}
		if _, err := v.Verify(token, body); err == nil {
			// Only a token made with a configured key may pass; the seeds made
			// with testCurrent are the only such inputs the fuzzer can find
			// short of breaking HMAC.
			if token != Sign(testCurrent, claimsFor(body)) {
				t.Fatalf("Verify accepted %q", token)
			}
		}
	})
}
