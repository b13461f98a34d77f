package qstashsim

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/testwait"
)

func TestDeliveryCarriesBodyHeadersAndSignature(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	dest := rc.url("/qstash/hubspot?tenant=a")
	body := `{"eventId":"e1"}`
	pr := b.publish(dest, body, map[string]string{
		"Content-Type":             "application/json",
		"Upstash-Forward-X-Trace":  "t-1",
		"Upstash-Forward-Tenant":   "acme",
		"Upstash-Retries":          "5",
		"Upstash-Deduplication-Id": "e1",
	})
	testwait.For(t, "the delivery", func() bool { return rc.count() == 1 })
	got := rc.requests()[0]
	if got.Method != http.MethodPost || got.URL != "/qstash/hubspot?tenant=a" || string(got.Body) != body {
		t.Fatalf("delivered %s %s %q", got.Method, got.URL, got.Body)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/json", "X-Trace": "t-1", "Tenant": "acme",
		"Upstash-Message-Id": pr.MessageID, "Upstash-Retried": "0", "User-Agent": "Upstash-QStash",
		"Upstash-Caller-Ip": "127.0.0.1",
	} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	for k := range got.Header {
		if strings.HasPrefix(k, "Upstash-Forward-") || k == "Upstash-Retries" || k == "Upstash-Deduplication-Id" || k == "Authorization" {
			t.Errorf("header %s leaked to the receiver", k)
		}
	}
	sig := got.Header.Get("Upstash-Signature")
	cur, next := b.sim.SigningKeys()
	now := b.clock.Now()
	c, err := Verify(sig, []string{cur}, dest, got.Body, now, 0)
	if err != nil {
		t.Fatalf("signature does not verify with the current key: %v", err)
	}
	if c.Iss != "Upstash" || c.Sub != dest || c.Iat != now.Unix() || c.Nbf != now.Unix() || c.Exp != now.Add(5*time.Minute).Unix() || !strings.HasPrefix(c.Jti, "jwt_") {
		t.Fatalf("claims %+v", c)
	}
	if !strings.HasSuffix(c.Body, "=") {
		t.Fatalf("body claim %q without QStash's padding", c.Body)
	}
	if _, err := Verify(sig, []string{next}, dest, got.Body, now, 0); err == nil {
		t.Fatal("signed with the current key, yet verifies with the next key alone")
	}
	if _, err := Verify(sig, []string{cur}, dest, []byte(`{"eventId":"e2"}`), now, 0); err == nil {
		t.Fatal("verifies a tampered body")
	}
	if _, err := Verify(sig, []string{cur}, rc.url("/qstash/hubspot"), got.Body, now, 0); err == nil {
		t.Fatal("verifies against another URL")
	}
	if _, err := Verify(sig, []string{cur}, dest, got.Body, now.Add(6*time.Minute), 0); err == nil {
		t.Fatal("verifies after exp")
	}
	b.idle()
	if m := b.info(pr.MessageID); m.State != "DELIVERED" || m.Retried != 0 || m.MaxRetries != 5 {
		t.Fatalf("message %+v", m)
	}
}

func TestSignWithNextKey(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{CurrentSigningKey: "sig_current", NextSigningKey: "sig_next"})
	rc := newReceiver(t, nil)
	dest := rc.url("/w")
	verifyLast := func(keys ...string) error {
		reqs := rc.requests()
		r := reqs[len(reqs)-1]
		_, err := Verify(r.Header.Get("Upstash-Signature"), keys, dest, r.Body, b.clock.Now(), 0)
		return err
	}
	b.publish(dest, "1", nil)
	testwait.For(t, "the first delivery", func() bool { return rc.count() == 1 })
	if err := verifyLast("sig_current"); err != nil {
		t.Fatalf("current key: %v", err)
	}

	// Through the control API, as the demo flips it.
	if a := b.do(http.MethodPut, "/_sim/qstash/signing", []byte(`{"signWithNext":true}`), nil); a.status != http.StatusOK || !strings.Contains(string(a.body), `"signWithNext":true`) {
		t.Fatalf("PUT signing: %d %s", a.status, a.body)
	}
	b.publish(dest, "2", nil)
	testwait.For(t, "the second delivery", func() bool { return rc.count() == 2 })
	if err := verifyLast("sig_next"); err != nil {
		t.Fatalf("next key: %v", err)
	}
	if err := verifyLast("sig_current"); err == nil {
		t.Fatal("signed with the next key, yet verifies with the current key alone")
	}
	// A receiver holding both keys accepts it: current fails, next matches.
	if err := verifyLast("sig_current", "sig_next"); err != nil {
		t.Fatalf("current then next: %v", err)
	}
	for _, body := range []string{`{}`, `{"signWithNext":"yes"}`, `{"other":true}`, `not json`} {
		if a := b.do(http.MethodPut, "/_sim/qstash/signing", []byte(body), nil); a.status != http.StatusBadRequest {
			t.Errorf("PUT signing %s: %d, want 400", body, a.status)
		}
	}
}

func TestPercentEncodedDestinationAndMethod(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	raw := rc.url("/a/b")
	enc := strings.NewReplacer(":", "%3A", "/", "%2F").Replace(raw)
	b.publish(enc, "x", map[string]string{"Upstash-Method": "put"})
	testwait.For(t, "the delivery", func() bool { return rc.count() == 1 })
	got := rc.requests()[0]
	if got.Method != http.MethodPut || got.URL != "/a/b" {
		t.Fatalf("delivered %s %s", got.Method, got.URL)
	}
	cur, _ := b.sim.SigningKeys()
	if _, err := Verify(got.Header.Get("Upstash-Signature"), []string{cur}, raw, got.Body, b.clock.Now(), 0); err != nil {
		t.Fatalf("sub of a decoded destination: %v", err)
	}
}

// failing answers status (with header) to the first n requests, then 200.
func failing(n, status int, header map[string]string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, i int) {
		if i < n {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte("failure " + strconv.Itoa(i)))
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

func TestRetriesUseQStashDefaultBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{DelayScale: 0.0005}) // 12 s → 6 ms, 148 s → 74 ms
	rc := newReceiver(t, failing(2, http.StatusInternalServerError, nil))
	pr := b.publish(rc.url("/w"), "x", nil)
	b.idle()
	m := b.info(pr.MessageID)
	if m.State != "DELIVERED" || m.Retried != 2 {
		t.Fatalf("message %+v", m)
	}
	want := []time.Duration{DefaultBackoff(1), DefaultBackoff(2)}
	if len(m.Delays) != 2 || m.Delays[0] != want[0] || m.Delays[1] != want[1] {
		t.Fatalf("delays %v, want %v", m.Delays, want)
	}
	if want[0].Round(time.Second) != 12*time.Second || want[1].Round(time.Second) != 148*time.Second {
		t.Fatalf("default backoff %v, want QStash's 12s and 2m28s", want)
	}
	reqs := rc.requests()
	for i, r := range reqs {
		if got := r.Header.Get("Upstash-Retried"); got != strconv.Itoa(i) {
			t.Errorf("attempt %d: Upstash-Retried %q", i, got)
		}
		if r.Header.Get("Upstash-Message-Id") != pr.MessageID {
			t.Errorf("attempt %d: another message id", i)
		}
	}
	if st := b.sim.Stats(); st.Retried != 2 || st.Failed != 2 || st.Delivered != 1 || st.Attempts != 3 || st.DLQ != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRetryDelayExpression(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, failing(3, http.StatusBadGateway, nil))
	pr := b.publish(rc.url("/w"), "x", map[string]string{"Upstash-Retries": "3", "Upstash-Retry-Delay": "pow(2, retried) * 1000"})
	b.idle()
	m := b.info(pr.MessageID)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if m.State != "DELIVERED" || len(m.Delays) != 3 || m.Delays[0] != want[0] || m.Delays[1] != want[1] || m.Delays[2] != want[2] {
		t.Fatalf("message %+v, want delays %v", m, want)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{DelayScale: 1e-6}) // a day → 86 ms
	now := b.clock.Now()
	cases := []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{503, "7", 7 * time.Second},
		{429, "6m5s", 6*time.Minute + 5*time.Second},
		{503, now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{429, "172800", 24 * time.Hour}, // capped at a day
		{503, "48h", 24 * time.Hour},
		{503, "soon", DefaultBackoff(1)},                        // unreadable: default backoff
		{500, "7", DefaultBackoff(1)},                           // only 429 and 503 carry it
		{503, now.Add(-time.Minute).Format(http.TimeFormat), 0}, // a past date: at once
	}
	for _, c := range cases {
		rc := newReceiver(t, failing(1, c.status, map[string]string{"Retry-After": c.retryAfter}))
		pr := b.publish(rc.url("/w"), "x", nil)
		b.idle()
		m := b.info(pr.MessageID)
		if m.State != "DELIVERED" || len(m.Delays) != 1 || m.Delays[0] != c.want {
			t.Errorf("%d Retry-After %q: %s delays %v, want [%v]", c.status, c.retryAfter, m.State, m.Delays, c.want)
		}
	}
	if st := b.sim.Stats(); st.RetryAfterHonoured != 6 {
		t.Fatalf("RetryAfterHonoured %d, want 6", st.RetryAfterHonoured)
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			<-r.Context().Done() // hold the first attempt until QStash gives up
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	pr := b.publish(rc.url("/w"), "x", map[string]string{"Upstash-Timeout": "100ms"})
	b.idle()
	if m := b.info(pr.MessageID); m.State != "DELIVERED" || m.Retried != 1 {
		t.Fatalf("message %+v", m)
	}
}

func TestDelayAndNotBefore(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	notBefore := b.clock.Now().Add(20 * time.Second).Unix()
	a := b.publish(rc.url("/a"), "x", map[string]string{"Upstash-Delay": "10s"})
	c := b.publish(rc.url("/b"), "y", map[string]string{"Upstash-Not-Before": strconv.FormatInt(notBefore, 10)})
	// A stale Not-Before (in the past) is delivered at once, not refused.
	stale := b.publish(rc.url("/c"), "z", map[string]string{"Upstash-Not-Before": strconv.FormatInt(b.clock.Now().Add(-time.Hour).Unix(), 10)})
	b.idle()
	if rc.count() != 3 || b.info(a.MessageID).State != "DELIVERED" || b.info(stale.MessageID).State != "DELIVERED" {
		t.Fatalf("delayed messages not delivered: %d", rc.count())
	}
	if got := b.info(c.MessageID).NotBefore; got != notBefore*1000 {
		t.Fatalf("notBefore %d, want %d ms", got, notBefore*1000)
	}
}

// TestFarNotBeforeWaits: a Not-Before in the far future must wait, not
// overflow into "now".
func TestFarNotBeforeWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{DelayScale: 1})
	rc := newReceiver(t, nil)
	far := b.publish(rc.url("/far"), "w", map[string]string{"Upstash-Not-Before": "1099511627776"})
	// A message published after it and due at once is delivered first; the
	// far one is still waiting then.
	near := b.publish(rc.url("/near"), "n", nil)
	testwait.For(t, "the due delivery", func() bool { return b.info(near.MessageID).State == "DELIVERED" })
	if m := b.info(far.MessageID); m.State != "CREATED" || m.Deliveries != 0 || rc.count() != 1 {
		t.Fatalf("a message due in the year 36812 was tried: %+v", m)
	}
}
