package hubspot

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

const testSecret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"

func TestSignV2ReferenceVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, uri, body, want string
	}{
		{"GET", "https://www.example.com/webhook_uri", "", "eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e"},
		{"POST", "https://www.example.com/webhook_uri", `{"example_field":"example_value"}`, "9569219f8ba981ffa6f6f16aa0f48637d35d728c7e4d93d0d52efaa512af7900"},
	}
	for _, tt := range tests {
		if got := SignV2(testSecret, tt.method, tt.uri, []byte(tt.body)); got != tt.want {
			t.Errorf("SignV2(%s %s) = %s, want %s", tt.method, tt.uri, got, tt.want)
		}
		h := http.Header{}
		h.Set(HeaderSignature, tt.want)
		h.Set(HeaderSignatureVersion, "v2")
		if err := VerifyRequest(testSecret, tt.method, tt.uri, []byte(tt.body), h, time.Now(), 0); err != nil {
			t.Errorf("VerifyRequest v2 vector: %v", err)
		}
	}
}

func TestNormalizeV3URI(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://x.com/a":                        "https://x.com/a",
		"https://x.com/a%3Ab%2Fc%3Fd%40e":        "https://x.com/a:b/c?d@e",
		"https://x.com/%21%24%27%28%29%2A%2C%3B": "https://x.com/!$'()*,;",
		"https://x.com/a%20b%3a":                 "https://x.com/a%20b:",
		"https://x.com/%2":                       "https://x.com/%2",
		"%":                                      "%",
		"%%3A":                                   "%:",
	}
	for in, want := range tests {
		if got := NormalizeV3URI(in); got != want {
			t.Errorf("NormalizeV3URI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVerifyRequest(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	body := []byte(`[{"eventId":1,"objectId":2}]`)
	uri := "https://hooks.example.com/hubspot?a=1"
	v3 := func(method, uri string, body []byte, ts int64) http.Header {
		h := http.Header{}
		h.Set(HeaderSignatureV3, SignV3(testSecret, method, uri, body, ts))
		h.Set(HeaderRequestTimestamp, itoa(ts))
		return h
	}
	v1 := http.Header{}
	v1.Set(HeaderSignature, SignV1(testSecret, body))
	v1.Set(HeaderSignatureVersion, "v1")
	v1NoVersion := http.Header{}
	v1NoVersion.Set(HeaderSignature, SignV1(testSecret, body))
	v2 := http.Header{}
	v2.Set(HeaderSignature, SignV2(testSecret, "POST", uri, body))
	v2.Set(HeaderSignatureVersion, "v2")
	v3NoTS := v3("POST", uri, body, now.UnixMilli())
	v3NoTS.Del(HeaderRequestTimestamp)
	v3BadB64 := v3("POST", uri, body, now.UnixMilli())
	v3BadB64.Set(HeaderSignatureV3, "!!!")
	v3BadTS := v3("POST", uri, body, now.UnixMilli())
	v3BadTS.Set(HeaderRequestTimestamp, "yesterday")
	v9 := http.Header{}
	v9.Set(HeaderSignature, "abc")
	v9.Set(HeaderSignatureVersion, "v9")

	ms := now.UnixMilli()
	tests := []struct {
		name   string
		method string
		uri    string
		body   []byte
		header http.Header
		want   error
	}{
		{"v3 ok", "POST", uri, body, v3("POST", uri, body, ms), nil},
		{"v3 ok escaped uri", "POST", "https://h.com/a%3Ab", body, v3("POST", "https://h.com/a:b", body, ms), nil},
		{"v3 ok 4m59s old", "POST", uri, body, v3("POST", uri, body, ms-299_000), nil},
		{"v3 ok 4m59s ahead", "POST", uri, body, v3("POST", uri, body, ms+299_000), nil},
		{"v3 tampered body", "POST", uri, []byte(`[{"eventId":1,"objectId":3}]`), v3("POST", uri, body, ms), ErrSignatureInvalid},
		{"v3 tampered uri", "POST", uri + "&b=2", body, v3("POST", uri, body, ms), ErrSignatureInvalid},
		{"v3 tampered method", "PUT", uri, body, v3("POST", uri, body, ms), ErrSignatureInvalid},
		{"v3 tampered timestamp", "POST", uri, body, func() http.Header {
			h := v3("POST", uri, body, ms)
			h.Set(HeaderRequestTimestamp, itoa(ms-1))
			return h
		}(), ErrSignatureInvalid},
		{"v3 stale", "POST", uri, body, v3("POST", uri, body, ms-301_000), ErrTimestampStale},
		{"v3 future", "POST", uri, body, v3("POST", uri, body, ms+301_000), ErrTimestampStale},
		{"v3 no timestamp", "POST", uri, body, v3NoTS, ErrSignatureMissing},
		{"v3 bad base64", "POST", uri, body, v3BadB64, ErrSignatureInvalid},
		{"v3 bad timestamp", "POST", uri, body, v3BadTS, ErrSignatureInvalid},
		{"v1 ok", "POST", uri, body, v1, nil},
		{"v1 ok without version header", "POST", uri, body, v1NoVersion, nil},
		{"v1 tampered body", "POST", uri, []byte("x"), v1, ErrSignatureInvalid},
		{"v2 ok", "POST", uri, body, v2, nil},
		{"v2 tampered uri", "POST", uri + "x", body, v2, ErrSignatureInvalid},
		{"v2 tampered body", "POST", uri, []byte("x"), v2, ErrSignatureInvalid},
		{"unknown version", "POST", uri, body, v9, ErrSignatureInvalid},
		{"no headers", "POST", uri, body, http.Header{}, ErrSignatureMissing},
		{"wrong secret", "POST", uri, body, func() http.Header {
			h := http.Header{}
			h.Set(HeaderSignatureV3, SignV3("other", "POST", uri, body, ms))
			h.Set(HeaderRequestTimestamp, itoa(ms))
			return h
		}(), ErrSignatureInvalid},
	}
	for _, tt := range tests {
		err := VerifyRequest(testSecret, tt.method, tt.uri, tt.body, tt.header, now, 5*time.Minute)
		if tt.want == nil && err != nil {
			t.Errorf("%s: unexpected error %v", tt.name, err)
		}
		if tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestVerifyRequestDefaultSkew(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	h := http.Header{}
	ts := now.Add(-6 * time.Minute).UnixMilli()
	h.Set(HeaderSignatureV3, SignV3(testSecret, "POST", "https://x/y", nil, ts))
	h.Set(HeaderRequestTimestamp, itoa(ts))
	if err := VerifyRequest(testSecret, "POST", "https://x/y", nil, h, now, 0); !errors.Is(err, ErrTimestampStale) {
		t.Fatalf("got %v, want ErrTimestampStale with default skew", err)
	}
}

func FuzzVerifyRequest(f *testing.F) {
	f.Add("secret", "POST", "https://x.com/a%3Ab?c=1", []byte(`[]`), int64(1_700_000_000_000), "sig", "1700000000000", "v2")
	f.Add("", "", "", []byte{}, int64(0), "", "", "")
	f.Add("s", "GET", "%", []byte{0xff}, int64(-1), "====", "-9223372036854775808", "v1")
	f.Fuzz(func(t *testing.T, secret, method, uri string, body []byte, ts int64, sig, tsHeader, version string) {
		now := time.UnixMilli(ts)
		// Arbitrary headers must never panic.
		h := http.Header{}
		h.Set(HeaderSignatureV3, sig)
		h.Set(HeaderRequestTimestamp, tsHeader)
		_ = VerifyRequest(secret, method, uri, body, h, now, 0)
		h = http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderSignatureVersion, version)
		_ = VerifyRequest(secret, method, uri, body, h, now, 0)
		_ = NormalizeV3URI(uri)

		// A signature made by SignV3 always verifies at its own time.
		h = http.Header{}
		h.Set(HeaderSignatureV3, SignV3(secret, method, uri, body, ts))
		h.Set(HeaderRequestTimestamp, itoa(ts))
		if err := VerifyRequest(secret, method, uri, body, h, now, 0); err != nil {
			t.Fatalf("SignV3 output did not verify: %v", err)
		}
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestParseSignatureVersions(t *testing.T) {
	t.Parallel()
	got, err := ParseSignatureVersions(" V3, v2 ,v1")
	if err != nil || len(got) != 3 || got[0] != SignatureV3 || got[1] != SignatureV2 || got[2] != SignatureV1 {
		t.Fatalf("ParseSignatureVersions = %v, %v", got, err)
	}
	for _, bad := range []string{"", "v4", "v3,", "v3,v3", "3"} {
		if _, err := ParseSignatureVersions(bad); err == nil {
			t.Errorf("ParseSignatureVersions(%q) accepted it", bad)
		}
	}
}

func TestVerifyRequestVersions(t *testing.T) {
	t.Parallel()
	const uri = "https://www.example.com/webhook_uri"
	body := []byte(`[]`)
	now := time.Now()
	v1 := http.Header{}
	v1.Set(HeaderSignature, SignV1(testSecret, body))
	v3 := http.Header{}
	v3.Set(HeaderSignatureV3, SignV3(testSecret, "POST", uri, body, now.UnixMilli()))
	v3.Set(HeaderRequestTimestamp, strconv.FormatInt(now.UnixMilli(), 10))
	both := v3.Clone()
	both.Set(HeaderSignature, SignV1(testSecret, body))

	if err := VerifyRequestVersions(nil, testSecret, "POST", uri, body, v1, now, 0); !errors.Is(err, ErrSignatureVersion) {
		t.Errorf("v1 by default: %v, want ErrSignatureVersion", err)
	}
	if err := VerifyRequestVersions([]SignatureVersion{SignatureV3, SignatureV1}, testSecret, "POST", uri, body, v1, now, 0); err != nil {
		t.Errorf("v1 widened: %v", err)
	}
	if err := VerifyRequestVersions(nil, testSecret, "POST", uri, body, v3, now, 0); err != nil {
		t.Errorf("v3 by default: %v", err)
	}
	if err := VerifyRequestVersions(nil, testSecret, "POST", uri, body, both, now.Add(time.Hour), 0); !errors.Is(err, ErrTimestampStale) {
		t.Errorf("stale v3 beside a valid v1: %v, want ErrTimestampStale (v1 must not rescue it)", err)
	}
	if err := VerifyRequestVersions([]SignatureVersion{SignatureV1}, testSecret, "POST", uri, body, v3, now, 0); !errors.Is(err, ErrSignatureVersion) {
		t.Errorf("v3 when only v1 is accepted: %v, want ErrSignatureVersion", err)
	}
	if err := VerifyRequest(testSecret, "POST", uri, body, v1, now, 0); err != nil {
		t.Errorf("VerifyRequest accepts every version: %v", err)
	}
}
