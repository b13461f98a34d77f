package hubspot

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Header names HubSpot uses to sign webhook (and workflow/CRM card) requests.
const (
	// HeaderSignatureV3 carries the base64 HMAC-SHA256 v3 signature.
	HeaderSignatureV3 = "X-HubSpot-Signature-v3"
	// HeaderRequestTimestamp carries the v3 signing time in epoch milliseconds.
	HeaderRequestTimestamp = "X-HubSpot-Request-Timestamp"
	// HeaderSignature carries the v1 or v2 hex SHA-256 signature.
	HeaderSignature = "X-HubSpot-Signature"
	// HeaderSignatureVersion says whether HeaderSignature is "v1" or "v2".
	HeaderSignatureVersion = "X-HubSpot-Signature-Version"
)

// WebhookMaxSkewDefault is how old (or how far in the future) a v3 request
// timestamp may be; HubSpot asks receivers to reject anything older than 5 min.
const WebhookMaxSkewDefault = 5 * time.Minute

// Sentinel errors of VerifyRequest; the returned errors wrap them with detail.
var (
	// ErrSignatureMissing means the request carries no usable signature headers.
	ErrSignatureMissing = errors.New("hubspot: webhook signature missing")
	// ErrSignatureInvalid means the signature does not match the request.
	ErrSignatureInvalid = errors.New("hubspot: webhook signature invalid")
	// ErrTimestampStale means the v3 timestamp is outside the allowed skew.
	ErrTimestampStale = errors.New("hubspot: webhook timestamp outside allowed skew")
)

// SignatureVersion names a HubSpot webhook signature scheme.
type SignatureVersion string

// Signature versions. v3 carries a timestamp and so bounds replays; v1 and v2
// sign no time, so a captured delivery verifies forever.
const (
	SignatureV1 SignatureVersion = "v1"
	SignatureV2 SignatureVersion = "v2"
	SignatureV3 SignatureVersion = "v3"
)

// SignatureVersionsDefault is what a receiver accepts unless told otherwise:
// HubSpot sends v3 on every delivery.
var SignatureVersionsDefault = []SignatureVersion{SignatureV3}

// ErrSignatureVersion means the request is signed only with a version the
// receiver does not accept (by default v1 and v2, which give no replay
// protection).
var ErrSignatureVersion = errors.New("hubspot: webhook signature version not accepted")

// ParseSignatureVersions parses a comma-separated list such as "v3,v2,v1".
// Case and spaces are ignored; an empty list, an unknown or repeated
// version is an error.
func ParseSignatureVersions(s string) ([]SignatureVersion, error) {
	var out []SignatureVersion
	for part := range strings.SplitSeq(s, ",") {
		v := SignatureVersion(strings.ToLower(strings.TrimSpace(part)))
		switch v {
		case SignatureV1, SignatureV2, SignatureV3:
		default:
			return nil, fmt.Errorf("signature version %q is unknown; use v3, v2 or v1, comma-separated (e.g. v3 or v3,v2,v1)", strings.TrimSpace(part))
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("signature version %s is listed twice; list each once", v)
		}
		out = append(out, v)
	}
	return out, nil
}

// SignV1 returns the v1 signature: lowercase hex SHA-256 of secret + body.
func SignV1(secret string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(secret))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// SignV2 returns the v2 signature: lowercase hex SHA-256 of
// secret + method + uri + body, with uri exactly as requested (scheme, host,
// path and query as HubSpot called it).
func SignV2(secret, method, uri string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(secret))
	h.Write([]byte(method))
	h.Write([]byte(uri))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// SignV3 returns the v3 signature: base64 (standard, padded) of HMAC-SHA256
// keyed with secret over method + NormalizeV3URI(uri) + body + timestamp,
// the timestamp written in decimal epoch milliseconds.
func SignV3(secret, method, uri string, body []byte, timestampMillis int64) string {
	return base64.StdEncoding.EncodeToString(signV3Raw(secret, method, uri, body, timestampMillis))
}

func signV3Raw(secret, method, uri string, body []byte, timestampMillis int64) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(method))
	m.Write([]byte(NormalizeV3URI(uri)))
	m.Write(body)
	m.Write([]byte(strconv.FormatInt(timestampMillis, 10)))
	return m.Sum(nil)
}

// v3Decoded lists the only escapes HubSpot decodes before signing a v3 URI.
var v3Decoded = map[string]byte{
	"3A": ':', "2F": '/', "3F": '?', "40": '@', "21": '!', "24": '$',
	"27": '\'', "28": '(', "29": ')', "2A": '*', "2C": ',', "3B": ';',
}

// NormalizeV3URI decodes exactly the percent-escapes HubSpot decodes before
// computing a v3 signature (%3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B,
// hex digits in either case) and leaves every other byte, including other
// escapes such as %20, untouched.
func NormalizeV3URI(uri string) string {
	if !strings.Contains(uri, "%") {
		return uri
	}
	var b strings.Builder
	b.Grow(len(uri))
	for i := 0; i < len(uri); i++ {
		if uri[i] == '%' && i+2 < len(uri) {
			if c, ok := v3Decoded[strings.ToUpper(uri[i+1:i+3])]; ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(uri[i])
	}
	return b.String()
}

// VerifyRequest checks a signed HubSpot request. uri must be the full public
// URI HubSpot called (e.g. "https://hooks.example.com/hubspot?x=1"), not the
// path seen behind a proxy; body must be the raw, unparsed bytes.
//
// When HeaderSignatureV3 is present the v3 scheme is used and the timestamp
// must lie within maxSkew of now (either side; 0 means WebhookMaxSkewDefault).
// Otherwise HeaderSignature is checked as v1 or v2 according to
// HeaderSignatureVersion (v1 when absent); v1/v2 carry no timestamp and so
// give no replay protection. Comparisons are constant-time.
//
// VerifyRequest accepts every version; a receiver should call
// VerifyRequestVersions with SignatureVersionsDefault instead.
//
// The error wraps ErrSignatureMissing, ErrSignatureInvalid or ErrTimestampStale.
func VerifyRequest(secret string, method, uri string, body []byte, header http.Header, now time.Time, maxSkew time.Duration) error {
	return VerifyRequestVersions(allVersions, secret, method, uri, body, header, now, maxSkew)
}

var allVersions = []SignatureVersion{SignatureV3, SignatureV2, SignatureV1}

// VerifyRequestVersions is VerifyRequest accepting only the versions in
// accepted (nil means SignatureVersionsDefault). A request whose v3 headers
// are present is judged by v3 alone when v3 is accepted; a request carrying
// only a signature of a version not accepted fails with ErrSignatureVersion.
func VerifyRequestVersions(accepted []SignatureVersion, secret string, method, uri string, body []byte, header http.Header, now time.Time, maxSkew time.Duration) error {
	if accepted == nil {
		accepted = SignatureVersionsDefault
	}
	if maxSkew <= 0 {
		maxSkew = WebhookMaxSkewDefault
	}
	if sig := header.Get(HeaderSignatureV3); sig != "" && slices.Contains(accepted, SignatureV3) {
		tsText := header.Get(HeaderRequestTimestamp)
		if tsText == "" {
			return fmt.Errorf("%w: %s present without %s", ErrSignatureMissing, HeaderSignatureV3, HeaderRequestTimestamp)
		}
		ts, err := strconv.ParseInt(strings.TrimSpace(tsText), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s %q is not epoch milliseconds", ErrSignatureInvalid, HeaderRequestTimestamp, tsText)
		}
		nowMs := now.UnixMilli()
		skewMs := maxSkew.Milliseconds()
		// ts is attacker data: measure the distance in uint64 so extreme values
		// cannot overflow into "fresh".
		if ts < nowMs && uint64(nowMs)-uint64(ts) > uint64(skewMs) {
			return fmt.Errorf("%w: timestamp %d is more than %s older than now (%d)", ErrTimestampStale, ts, maxSkew, nowMs)
		}
		if ts > nowMs && uint64(ts)-uint64(nowMs) > uint64(skewMs) {
			return fmt.Errorf("%w: timestamp %d is more than %s ahead of now (%d)", ErrTimestampStale, ts, maxSkew, nowMs)
		}
		got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig))
		if err != nil {
			return fmt.Errorf("%w: %s is not base64", ErrSignatureInvalid, HeaderSignatureV3)
		}
		want := signV3Raw(secret, method, uri, body, ts)
		if !hmac.Equal(got, want) {
			return fmt.Errorf("%w: v3 signature mismatch for %s %s", ErrSignatureInvalid, method, uri)
		}
		return nil
	}

	sig := strings.TrimSpace(header.Get(HeaderSignature))
	if sig == "" {
		if header.Get(HeaderSignatureV3) != "" {
			return fmt.Errorf("%w: only a v3 signature is present and the accepted versions are %v", ErrSignatureVersion, accepted)
		}
		return fmt.Errorf("%w: neither %s nor %s header present", ErrSignatureMissing, HeaderSignatureV3, HeaderSignature)
	}
	version := strings.ToLower(strings.TrimSpace(header.Get(HeaderSignatureVersion)))
	if v := SignatureVersion(cmp.Or(version, "v1")); (v == SignatureV1 || v == SignatureV2) && !slices.Contains(accepted, v) {
		if slices.Contains(accepted, SignatureV3) {
			return fmt.Errorf("%w: the request carries only a %s signature (no %s); accepted: %v", ErrSignatureVersion, v, HeaderSignatureV3, accepted)
		}
		return fmt.Errorf("%w: %s signature; accepted: %v", ErrSignatureVersion, v, accepted)
	}
	var want string
	switch version {
	case "", "v1":
		want = SignV1(secret, body)
	case "v2":
		want = SignV2(secret, method, uri, body)
	default:
		return fmt.Errorf("%w: unsupported %s %q", ErrSignatureInvalid, HeaderSignatureVersion, version)
	}
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(sig)), []byte(want)) != 1 {
		return fmt.Errorf("%w: %s signature mismatch", ErrSignatureInvalid, strings.ToLower(cmp.Or(header.Get(HeaderSignatureVersion), "v1")))
	}
	return nil
}
