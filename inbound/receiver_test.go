package inbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/store"
)

func TestReceiverStoresDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.deliver(t, []byte(sampleDelivery))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var resp receiveResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Received != 8 || resp.Inserted != 8 {
		t.Fatalf("response %s (%v)", rec.Body, err)
	}
	if n := b.count(t); n != 8 {
		t.Fatalf("%d rows stored, want 8", n)
	}
	pending := b.all(t)
	parsed, _ := ParseEvents([]byte(sampleDelivery))
	byKey := map[string]store.InboundEvent{}
	for _, ev := range pending {
		byKey[ev.IdempotencyKey] = ev
	}
	for i, p := range parsed {
		ev, ok := byKey[p.IdempotencyKey]
		if !ok {
			t.Fatalf("event %d not stored under its idempotency key", i)
		}
		if ev.Source != "hubspot" || ev.ExternalID != p.Event.ObjectID || ev.EventType != p.Event.EventType {
			t.Errorf("event %d stored as %+v", i, ev)
		}
		if !jsonEqual(t, ev.RawPayload, p.Raw) {
			t.Errorf("event %d raw payload %s, want %s", i, ev.RawPayload, p.Raw)
		}
	}
	if ev := byKey[testcheck.Index(t, "the parsed events", parsed, 0).IdempotencyKey]; ev.ObjectType != "contacts" {
		t.Errorf("contact.creation stored with ObjectType %q", ev.ObjectType)
	}
	if ev := byKey[testcheck.Index(t, "the parsed events", parsed, 4).IdempotencyKey]; ev.ObjectType != "ticket" {
		t.Errorf("unmapped ticket.deletion stored with ObjectType %q", ev.ObjectType)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestReceiverReplayStoresNothingNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliver(t, []byte(sampleDelivery))
	if n := b.count(t); n != 8 {
		t.Fatalf("%d rows, want 8", n)
	}
	// The same delivery again, and as HubSpot's retry (attemptNumber bumped).
	retry := strings.ReplaceAll(sampleDelivery, `"attemptNumber":0`, `"attemptNumber":4`)
	for _, body := range []string{sampleDelivery, retry} {
		rec := b.deliver(t, []byte(body))
		var resp receiveResponse
		_ = json.Unmarshal(rec.Body.Bytes(), &resp)
		if rec.Code != http.StatusOK || resp.Inserted != 0 {
			t.Fatalf("replay answered %d %s, want 200 with nothing inserted", rec.Code, rec.Body)
		}
	}
	if n := b.count(t); n != 8 {
		t.Fatalf("replay changed the row count to %d", n)
	}
}

func TestReceiverDuplicateWithinDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := `{"eventId":5,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","objectId":9,"propertyName":"phone","propertyValue":"1","attemptNumber":%d}`
	body := "[" + strings.Replace(ev, "%d", "0", 1) + "," + strings.Replace(ev, "%d", "1", 1) + "]"
	rec := b.deliver(t, []byte(body))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if n := b.count(t); n != 1 {
		t.Fatalf("%d rows for one event sent twice, want 1", n)
	}
}

func TestReceiverSignatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`[{"eventId":1,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.deletion","objectId":1}]`)
	now := b.clock.Now()
	uri := testPublicURL + WebhookPath
	v3 := func(secret, uri string, body []byte, at time.Time) http.Header {
		h := http.Header{}
		h.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(secret, http.MethodPost, uri, body, at.UnixMilli()))
		h.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(at.UnixMilli(), 10))
		return h
	}
	v12 := func(version, sig string) http.Header {
		h := http.Header{}
		h.Set(hubspot.HeaderSignature, sig)
		if version != "" {
			h.Set(hubspot.HeaderSignatureVersion, version)
		}
		return h
	}
	noTS := v3(testSecret, uri, body, now)
	noTS.Del(hubspot.HeaderRequestTimestamp)
	cases := []struct {
		name   string
		header http.Header
		body   []byte
		want   int
	}{
		{"unsigned", http.Header{}, body, http.StatusUnauthorized},
		{"v3 tampered body", v3(testSecret, uri, body, now), append(bytes.Clone(body[:len(body)-1]), ' ', ']'), http.StatusUnauthorized},
		{"v3 other URI", v3(testSecret, testPublicURL+"/other", body, now), body, http.StatusUnauthorized},
		{"v3 other host", v3(testSecret, "https://evil.example.com"+WebhookPath, body, now), body, http.StatusUnauthorized},
		{"v3 wrong secret", v3("nope", uri, body, now), body, http.StatusUnauthorized},
		{"v3 stale", v3(testSecret, uri, body, now.Add(-6*time.Minute)), body, http.StatusUnauthorized},
		{"v3 future", v3(testSecret, uri, body, now.Add(6*time.Minute)), body, http.StatusUnauthorized},
		{"v3 without timestamp", noTS, body, http.StatusUnauthorized},
		{"v1 wrong", v12("v1", hubspot.SignV1("nope", body)), body, http.StatusUnauthorized},
		{"v2 wrong URI", v12("v2", hubspot.SignV2(testSecret, http.MethodPost, "http://crm.example.com"+WebhookPath, body)), body, http.StatusUnauthorized},
		{"unknown version", v12("v9", hubspot.SignV1(testSecret, body)), body, http.StatusUnauthorized},
		// v1 and v2 sign no time: refused unless Signatures widens the default.
		{"v1 valid, not accepted", v12("", hubspot.SignV1(testSecret, body)), body, http.StatusUnauthorized},
		{"v2 valid, not accepted", v12("v2", hubspot.SignV2(testSecret, http.MethodPost, uri, body)), body, http.StatusUnauthorized},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(c.body))
		req.Header = c.header
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		b.receiver.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, rec.Code, c.want, rec.Body)
		}
	}
	if n := b.count(t); n != 0 {
		t.Fatalf("rejected requests stored %d rows", n)
	}

	// Accepted: v3 within the skew on either side, and v1 and v2 by a
	// receiver whose Signatures widen the default.
	wide, err := NewReceiver(ReceiverConfig{
		Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now,
		Signatures: []hubspot.SignatureVersion{hubspot.SignatureV3, hubspot.SignatureV2, hubspot.SignatureV1},
	})
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		name   string
		rc     *Receiver
		header http.Header
	}{
		{"v3 now", b.receiver, v3(testSecret, uri, body, now)},
		{"v3 4 min old", b.receiver, v3(testSecret, uri, body, now.Add(-4*time.Minute))},
		{"v3 4 min ahead", b.receiver, v3(testSecret, uri, body, now.Add(4*time.Minute))},
		{"v1 widened", wide, v12("", hubspot.SignV1(testSecret, body))},
		{"v2 widened", wide, v12("v2", hubspot.SignV2(testSecret, http.MethodPost, uri, body))},
		{"v3 widened", wide, v3(testSecret, uri, body, now)},
	}
	for _, c := range ok {
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Header = c.header
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		c.rc.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d, want 200 (%s)", c.name, rec.Code, rec.Body)
		}
	}
	if n := b.count(t); n != 1 {
		t.Fatalf("%d rows after six signed copies of one event, want 1", n)
	}
}

// TestReceiverSignatureVersions is the signature table of issue 12: v3 only
// by default, v1/v2 only when widened, stale v3 refused, and a replayed v3
// delivery (same body and signature, within the window) stored once.
func TestReceiverSignatureVersions(t *testing.T) {
	t.Parallel()
	all := []hubspot.SignatureVersion{hubspot.SignatureV3, hubspot.SignatureV2, hubspot.SignatureV1}
	cases := []struct {
		name       string
		accepted   []hubspot.SignatureVersion
		sign       string // v1, v2, v3 or "v3 stale"
		wantStatus int
		wantReason string
	}{
		{"v3 by default", nil, "v3", http.StatusOK, ""},
		{"v1 only by default", nil, "v1", http.StatusUnauthorized, RejectSignatureVersion},
		{"v2 only by default", nil, "v2", http.StatusUnauthorized, RejectSignatureVersion},
		{"stale v3 by default", nil, "v3 stale", http.StatusUnauthorized, RejectTimestampStale},
		{"v1 widened", all, "v1", http.StatusOK, ""},
		{"v2 widened", all, "v2", http.StatusOK, ""},
		{"v2 with v3,v2", []hubspot.SignatureVersion{hubspot.SignatureV3, hubspot.SignatureV2}, "v2", http.StatusOK, ""},
		{"v1 with v3,v2", []hubspot.SignatureVersion{hubspot.SignatureV3, hubspot.SignatureV2}, "v1", http.StatusUnauthorized, RejectSignatureVersion},
		{"stale v3 widened", all, "v3 stale", http.StatusUnauthorized, RejectTimestampStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var reasons []string
			rc, err := NewReceiver(ReceiverConfig{
				Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now,
				Signatures: tc.accepted,
				Hooks:      ReceiverHooks{OnReject: func(reason string, _ int) { reasons = append(reasons, reason) }},
			})
			if err != nil {
				t.Fatal(err)
			}
			body := []byte(`[{"eventId":7,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.deletion","objectId":3}]`)
			uri := testPublicURL + WebhookPath
			h := http.Header{"Content-Type": {"application/json"}}
			switch tc.sign {
			case "v1":
				h.Set(hubspot.HeaderSignature, hubspot.SignV1(testSecret, body))
			case "v2":
				h.Set(hubspot.HeaderSignature, hubspot.SignV2(testSecret, http.MethodPost, uri, body))
				h.Set(hubspot.HeaderSignatureVersion, "v2")
			case "v3", "v3 stale":
				at := b.clock.Now()
				if tc.sign == "v3 stale" {
					at = at.Add(-hubspot.WebhookMaxSkewDefault - time.Second)
				}
				h.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(testSecret, http.MethodPost, uri, body, at.UnixMilli()))
				h.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(at.UnixMilli(), 10))
			}
			send := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
				req.Header = h.Clone()
				rec := httptest.NewRecorder()
				rc.ServeHTTP(rec, req)
				return rec
			}
			rec := send()
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus != http.StatusOK {
				if len(reasons) != 1 || reasons[0] != tc.wantReason {
					t.Errorf("reject reasons %v, want [%s]", reasons, tc.wantReason)
				}
				if n := b.count(t); n != 0 {
					t.Fatalf("a refused delivery stored %d rows", n)
				}
				return
			}
			// The same delivery replayed (same body and signature): 200, stored once.
			if rec := send(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"inserted":0`) {
				t.Fatalf("replay answered %d %s, want 200 inserting nothing", rec.Code, rec.Body)
			}
			if n := b.count(t); n != 1 {
				t.Fatalf("%d rows after a delivery and its replay, want 1", n)
			}
		})
	}
}

func TestReceiverSignatureConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, bad := range [][]hubspot.SignatureVersion{{}, {"v4"}} {
		if _, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, Signatures: bad}); err == nil || !strings.Contains(err.Error(), "Signatures") {
			t.Errorf("Signatures %q: err %v, want one naming Signatures", bad, err)
		}
	}
}

// TestReceiverForwardedHeaders checks that X-Forwarded-Proto/-Host decide the
// signed URI only when the peer is a trusted proxy.
func TestReceiverForwardedHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proxies, err := ParseTrustedProxies("10.0.0.1, 192.168.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, Now: b.clock.Now, TrustedProxies: proxies})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`[{"eventId":8,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.deletion","objectId":4}]`)
	at := b.clock.Now().UnixMilli()
	send := func(peer, signedURI string, forwarded bool) int {
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Host = "internal:8080"
		req.RemoteAddr = peer
		req.Header.Set("Content-Type", "application/json")
		if forwarded {
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-Host", "crm.example.com")
		}
		req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(testSecret, http.MethodPost, signedURI, body, at))
		req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(at, 10))
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	public := "https://crm.example.com" + WebhookPath
	own := "http://internal:8080" + WebhookPath
	cases := []struct {
		name      string
		peer      string
		signed    string
		forwarded bool
		want      int
	}{
		{"trusted proxy, forwarded URI", "10.0.0.1:5555", public, true, http.StatusOK},
		{"trusted range, forwarded URI", "192.168.4.2:5555", public, true, http.StatusOK},
		{"untrusted peer, forwarded URI", "203.0.113.9:5555", public, true, http.StatusUnauthorized},
		{"untrusted peer, own Host", "203.0.113.9:5555", own, true, http.StatusOK},
		{"trusted proxy, own Host ignored", "10.0.0.1:5555", own, true, http.StatusUnauthorized},
		{"trusted proxy, no forwarded headers", "10.0.0.1:5555", own, false, http.StatusOK},
	}
	for _, c := range cases {
		if got := send(c.peer, c.signed, c.forwarded); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}

	for _, bad := range []string{"10.0.0", "10.0.0.0/33", "host.example.com"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted it", bad)
		}
	}
	if p, err := ParseTrustedProxies(""); err != nil || len(p) != 0 {
		t.Errorf("ParseTrustedProxies(\"\") = %v, %v; want none", p, err)
	}
}

// TestReceiverReferenceVectors runs the v2 vectors of HubSpot's documentation
// (reference/hubspot.md) through the receiver. Their body is not an event
// array, so a correct signature shows as 400 (parsed, rejected) and a wrong
// one as 401.
func TestReceiverReferenceVectors(t *testing.T) {
	t.Parallel()
	const secret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
	b := setup(t)
	rc, err := NewReceiver(ReceiverConfig{
		Store: b.store.Inbound(), ClientSecret: secret, PublicURL: "https://www.example.com", Now: b.clock.Now,
		Signatures: []hubspot.SignatureVersion{hubspot.SignatureV3, hubspot.SignatureV2},
	})
	if err != nil {
		t.Fatal(err)
	}
	send := func(sig string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhook_uri", strings.NewReader(`{"example_field":"example_value"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(hubspot.HeaderSignature, sig)
		req.Header.Set(hubspot.HeaderSignatureVersion, "v2")
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	const good = "9569219f8ba981ffa6f6f16aa0f48637d35d728c7e4d93d0d52efaa512af7900"
	if got := send(good); got != http.StatusBadRequest {
		t.Errorf("reference v2 POST vector: status %d, want 400 (signature accepted, body not an array)", got)
	}
	if got := send(strings.ToUpper(good)); got != http.StatusBadRequest {
		t.Errorf("upper-case hex: status %d, want 400", got)
	}
	if got := send(strings.Replace(good, "9569", "9568", 1)); got != http.StatusUnauthorized {
		t.Errorf("altered vector: status %d, want 401", got)
	}
	// The GET vector cannot reach a POST-only receiver; check it on the verifier.
	h := http.Header{}
	h.Set(hubspot.HeaderSignature, "eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e")
	h.Set(hubspot.HeaderSignatureVersion, "v2")
	if err := hubspot.VerifyRequest(secret, http.MethodGet, "https://www.example.com/webhook_uri", nil, h, time.Now(), 0); err != nil {
		t.Errorf("reference v2 GET vector: %v", err)
	}
	if n := b.count(t); n != 0 {
		t.Fatalf("%d rows stored", n)
	}
}

func TestReceiverRejectsBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	small, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now, MaxBodyBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	var rejects []string
	var mu sync.Mutex
	hooked, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now,
		Hooks: ReceiverHooks{OnReject: func(reason string, _ int) { mu.Lock(); rejects = append(rejects, reason); mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	ev := `{"eventId":1,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.deletion","objectId":1}`
	many := "[" + strings.TrimSuffix(strings.Repeat(ev+",", 101), ",") + "]"
	big := "[" + strings.TrimSuffix(strings.Repeat(ev+",", 10), ",") + "]"

	type tc struct {
		name   string
		rc     http.Handler
		req    func() *http.Request
		status int
		reason string
	}
	signed := func(body string) func() *http.Request {
		return func() *http.Request { return signedRequest(t, []byte(body), b.clock.Now()) }
	}
	cases := []tc{
		{"GET", hooked, func() *http.Request { return httptest.NewRequest(http.MethodGet, WebhookPath, nil) }, http.StatusMethodNotAllowed, RejectMethod},
		{"text/plain", hooked, func() *http.Request {
			r := signedRequest(t, []byte("[]"), b.clock.Now())
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, http.StatusUnsupportedMediaType, RejectContentType},
		{"no content type", hooked, func() *http.Request {
			r := signedRequest(t, []byte("[]"), b.clock.Now())
			r.Header.Del("Content-Type")
			return r
		}, http.StatusUnsupportedMediaType, RejectContentType},
		{"too large", small, signed(big), http.StatusRequestEntityTooLarge, RejectTooLarge},
		{"too large, streamed", small, func() *http.Request {
			// No declared length: refused as it is read, past the limit.
			r := signedRequest(t, []byte(big), b.clock.Now())
			r.Body = io.NopCloser(strings.NewReader(big))
			r.ContentLength = -1
			return r
		}, http.StatusRequestEntityTooLarge, RejectTooLarge},
		{"malformed JSON", hooked, signed(`[{"objectId":`), http.StatusBadRequest, RejectMalformed},
		{"not an array", hooked, signed(`{"objectId":1}`), http.StatusBadRequest, RejectMalformed},
		{"101 events", hooked, signed(many), http.StatusBadRequest, RejectTooManyEvents},
		{"unsigned", hooked, func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader("[]"))
			r.Header.Set("Content-Type", "application/json")
			return r
		}, http.StatusUnauthorized, RejectSignatureMissing},
		{"stale", hooked, func() *http.Request { return signedRequest(t, []byte("[]"), b.clock.Now().Add(-time.Hour)) }, http.StatusUnauthorized, RejectTimestampStale},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		c.rc.ServeHTTP(rec, c.req())
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, rec.Code, c.status, rec.Body)
			continue
		}
		var er errorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error != c.reason {
			t.Errorf("%s: body %s, want error %q", c.name, rec.Body, c.reason)
		}
		if c.status == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != http.MethodPost {
			t.Errorf("405 without Allow: POST")
		}
	}
	if n := b.count(t); n != 0 {
		t.Fatalf("rejected requests stored %d rows", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rejects) != len(cases)-2 { // the two "too large" went to the other receiver
		t.Errorf("OnReject called %d times (%v), want %d", len(rejects), rejects, len(cases)-2)
	}
	// Charset parameters and +json types are JSON.
	r := signedRequest(t, []byte("[]"), b.clock.Now())
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	rec := httptest.NewRecorder()
	b.receiver.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Errorf("charset parameter: status %d", rec.Code)
	}
}

func TestReceiverStoreFailureAnswers500(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.db.Close(); err != nil {
		t.Fatal(err)
	}
	rec := b.deliver(t, []byte(sampleDelivery))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500 so that HubSpot retries", rec.Code)
	}
}

func TestReceiverMarksEchoes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliverEvents(t,
		hubspot.WebhookEvent{EventID: 1, OccurredAt: 1700000000000, SubscriptionType: "contact.propertyChange", ObjectID: 1, PropertyName: "phone", PropertyValue: "1", ChangeSource: "INTEGRATION", SourceID: testAppID},
		hubspot.WebhookEvent{EventID: 2, OccurredAt: 1700000000000, SubscriptionType: "contact.propertyChange", ObjectID: 1, PropertyName: "phone", PropertyValue: "2", ChangeSource: "CRM_UI"},
	)
	stored := b.all(t)
	echoes := 0
	for _, ev := range stored {
		var e Event
		if err := json.Unmarshal(ev.Payload, &e); err != nil {
			t.Fatal(err)
		}
		if e.Echo {
			echoes++
		}
	}
	if len(stored) != 2 || echoes != 1 {
		t.Fatalf("%d events, %d marked echo; want 2 and 1", len(stored), echoes)
	}
}

// countingStore is an InboundRepository that only counts EnqueueBatch calls:
// the fuzz test below exercises the HTTP, signature and parse path, which must
// reject junk before any store call.
type countingStore struct {
	store.InboundRepository
	mu      sync.Mutex
	batches int
	events  int
}

func (c *countingStore) EnqueueBatch(_ context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	c.events += len(evs)
	out := make([]store.EnqueueResult, len(evs))
	for i := range out {
		out[i] = store.EnqueueResult{ID: strconv.Itoa(i), Inserted: true}
	}
	return out, nil
}

func FuzzReceiver(f *testing.F) {
	f.Add([]byte(sampleDelivery), true, int64(0), "application/json")
	f.Add([]byte(sampleDelivery), false, int64(0), "application/json")
	f.Add([]byte(`[]`), true, int64(-400000), "application/json")
	f.Add([]byte(`[{"objectId":1}]`), true, int64(0), "application/json")
	f.Add([]byte(`garbage`), true, int64(0), "text/plain")
	f.Add([]byte(`[{"objectId":1,"occurredAt":1,"subscriptionType":"x.y"}]`), true, int64(299999), "application/json; charset=utf-8")
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, sign bool, skewMillis int64, contentType string) {
		cs := &countingStore{}
		rc, err := NewReceiver(ReceiverConfig{Store: cs, ClientSecret: testSecret, PublicURL: testPublicURL, Now: func() time.Time { return now }, MaxBodyBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		ts := now.UnixMilli() + skewMillis
		if sign {
			req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(testSecret, http.MethodPost, testPublicURL+WebhookPath, body, ts))
		} else {
			req.Header.Set(hubspot.HeaderSignatureV3, "AAAA")
		}
		req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(ts, 10))
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)

		fresh := skewMillis >= -300000 && skewMillis <= 300000
		// Malformed events inside an array are refused one by one; only a
		// body that is no array of at most 100 events is a 400.
		_, _, perr := ParseDelivery(body)
		switch {
		case rec.Code == http.StatusOK:
			if !sign || !fresh || perr != nil || !isJSON(contentType) {
				t.Fatalf("200 for sign=%v fresh=%v parse=%v ct=%q", sign, fresh, perr, contentType)
			}
		case rec.Code >= 400 && rec.Code < 500:
			if cs.batches != 0 {
				t.Fatalf("status %d but the store was called", rec.Code)
			}
			if sign && fresh && perr == nil && isJSON(contentType) && len(body) <= 64<<10 {
				t.Fatalf("valid delivery rejected with %d: %s", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("status %d", rec.Code)
		}
		if (!sign || !fresh) && isJSON(contentType) && len(body) <= 64<<10 && rec.Code != http.StatusUnauthorized {
			t.Fatalf("bad signature answered %d", rec.Code)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", rec.Body)
		}
		if errors.Is(perr, ErrTooManyEvents) && rec.Code == http.StatusOK {
			t.Fatal("too many events accepted")
		}
	})
}

// TestReceiverEveryBackend stores, replays and rejects a delivery on each
// database, and lets a worker apply it.
func TestReceiverEveryBackend(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres, store.MySQL} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setupDialect(t, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
			// A NUL in a property value and a non-BMP character must survive
			// PostgreSQL's jsonb and MySQL's JSON.
			body := strings.Replace(sampleDelivery, `"propertyValue":"Ada"`, `"propertyValue":"A\u0000da 🚀"`, 1)
			for range 2 {
				if rec := b.deliver(t, []byte(body)); rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			unsigned := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(body))
			unsigned.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			b.receiver.ServeHTTP(rec, unsigned)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("unsigned: %d", rec.Code)
			}
			if n := b.count(t); n != 8 {
				t.Fatalf("%d rows, want 8", n)
			}
			reader := &fakeReader{objects: map[string]hubspot.Object{"123": {ID: "123", Properties: map[string]string{"email": "ada@example.com"}}}}
			drain(t, b.newWorker(t, reader, "w"))
			if got := b.statusCounts(t); got["processed"] != 8 {
				t.Fatalf("statuses %v", got)
			}
		})
	}
}

// TestReceiverLogsByDefault: a Receiver without a Logger logs its refusals
// to slog.Default(), as the other services do, so that a wrong client
// secret is not a silence. Not parallel: it swaps the default logger.
func TestReceiverLogsByDefault(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	b := setup(t)
	req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`[]`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	b.receiver.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("unsigned delivery = %d; want 401", rec.Code)
	}
	if !strings.Contains(buf.String(), "webhook rejected") {
		t.Fatalf("the default logger got %q; want the refusal", buf.String())
	}
}
