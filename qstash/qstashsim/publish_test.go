package qstashsim

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPublishNeedsTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	for name, auth := range map[string]string{
		"missing":      "-",
		"wrong token":  "Bearer not-the-token",
		"wrong scheme": "Basic " + b.sim.Token(),
		"empty bearer": "Bearer ",
	} {
		a := b.do(http.MethodPost, "/v2/publish/"+rc.url("/x"), []byte("{}"), map[string]string{"Authorization": auth})
		if a.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, a.status)
			continue
		}
		if msg := a.errorText(t); !strings.Contains(msg, "Unauthorized") {
			t.Errorf("%s: error %q", name, msg)
		}
	}
	for _, path := range []string{"/v2/dlq", "/v2/dlq/x", "/v2/messages/msg_x"} {
		if a := b.do(http.MethodGet, path, nil, map[string]string{"Authorization": "Bearer nope"}); a.status != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, a.status)
		}
	}
	if st := b.sim.Stats(); st.Published != 0 || rc.count() != 0 {
		t.Fatalf("an unauthorised publish was kept: %+v, %d deliveries", st, rc.count())
	}
	// The right token works, so the 401s above were about the token.
	b.publish(rc.url("/x"), "{}", nil)
}

func TestPublishRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{BodyMax: 1024})
	rc := newReceiver(t, nil)
	dest := rc.url("/x")
	cases := []struct {
		name   string
		path   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"no destination", "/v2/publish/", nil, "", 400, "no destination"},
		{"relative destination", "/v2/publish/just-a-name", nil, "", 400, "absolute http(s) URL"},
		{"other scheme", "/v2/publish/ftp://example.com/x", nil, "", 400, "absolute http(s) URL"},
		{"no host", "/v2/publish/http:///x", nil, "", 400, "absolute http(s) URL"},
		{"encoded without host", "/v2/publish/http%3A%2F%2F", nil, "", 400, "absolute http(s) URL"},
		{"oversized body", "/v2/publish/" + dest, nil, strings.Repeat("x", 1025), 413, "larger than 1024"},
		{"negative retries", "/v2/publish/" + dest, map[string]string{"Upstash-Retries": "-1"}, "", 400, "Upstash-Retries"},
		{"retries not a number", "/v2/publish/" + dest, map[string]string{"Upstash-Retries": "three"}, "", 400, "Upstash-Retries"},
		{"too many retries", "/v2/publish/" + dest, map[string]string{"Upstash-Retries": "1000"}, "", 400, "Upstash-Retries"},
		{"bad retry delay", "/v2/publish/" + dest, map[string]string{"Upstash-Retry-Delay": "pow(2, retried"}, "", 400, "Upstash-Retry-Delay"},
		{"unknown function", "/v2/publish/" + dest, map[string]string{"Upstash-Retry-Delay": "system(1)"}, "", 400, "unknown name"},
		{"bad delay", "/v2/publish/" + dest, map[string]string{"Upstash-Delay": "soon"}, "", 400, "Upstash-Delay"},
		{"delay without unit", "/v2/publish/" + dest, map[string]string{"Upstash-Delay": "10"}, "", 400, "Upstash-Delay"},
		{"negative delay", "/v2/publish/" + dest, map[string]string{"Upstash-Delay": "-5s"}, "", 400, "negative"},
		{"bad not-before", "/v2/publish/" + dest, map[string]string{"Upstash-Not-Before": "tomorrow"}, "", 400, "Upstash-Not-Before"},
		{"zero timeout", "/v2/publish/" + dest, map[string]string{"Upstash-Timeout": "0s"}, "", 400, "Upstash-Timeout"},
		{"bad method", "/v2/publish/" + dest, map[string]string{"Upstash-Method": "BREW"}, "", 400, "Upstash-Method"},
		{"bad content dedup", "/v2/publish/" + dest, map[string]string{"Upstash-Content-Based-Deduplication": "maybe"}, "", 400, "Upstash-Content-Based-Deduplication"},
		{"long dedup id", "/v2/publish/" + dest, map[string]string{"Upstash-Deduplication-Id": strings.Repeat("d", 300)}, "", 400, "Upstash-Deduplication-Id"},
		{"flow value without key", "/v2/publish/" + dest, map[string]string{"Upstash-Flow-Control-Value": "rate=1"}, "", 400, "needs Upstash-Flow-Control-Key"},
		{"flow key without value", "/v2/publish/" + dest, map[string]string{"Upstash-Flow-Control-Key": "k"}, "", 400, "Upstash-Flow-Control-Value"},
		{"bad flow value", "/v2/publish/" + dest, map[string]string{"Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": "parallelism=0"}, "", 400, "parallelism"},
		{"unknown flow key", "/v2/publish/" + dest, map[string]string{"Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": "burst=3"}, "", 400, "unknown key"},
	}
	for _, c := range cases {
		a := b.do(http.MethodPost, c.path, []byte(c.body), c.header)
		if a.status != c.status {
			t.Errorf("%s: status %d %s, want %d", c.name, a.status, a.body, c.status)
			continue
		}
		if msg := a.errorText(t); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, msg, c.want)
		}
	}
	if a := b.do(http.MethodGet, "/v2/publish/"+dest, nil, nil); a.status != http.StatusMethodNotAllowed {
		t.Errorf("GET publish: %d, want 405", a.status)
	}
	if st := b.sim.Stats(); st.Published != 0 {
		t.Fatalf("refused publishes were kept: %+v", st)
	}
	b.idle()
	if n := rc.count(); n != 0 {
		t.Fatalf("refused publishes were delivered %d times", n)
	}
}

func TestPublishAnswersLikeQStash(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	a := b.do(http.MethodPost, "/v2/publish/"+rc.url("/qstash/hubspot"), []byte(`{"eventId":"1"}`), nil)
	if a.status != http.StatusCreated {
		t.Fatalf("status %d %s, want 201", a.status, a.body)
	}
	if got := string(a.body); !strings.HasPrefix(got, `{"messageId":"msg_`) || !strings.HasSuffix(got, `","deduplicated":false}`) {
		t.Fatalf("body %s", got)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

func TestDeduplicationID(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	dest := rc.url("/qstash/hubspot")
	h := map[string]string{"Upstash-Deduplication-Id": "event-42"}
	first := b.publish(dest, `{"eventId":"42"}`, h)
	// Another body under the same id is still the same message.
	second := b.publish(dest, `{"eventId":"other"}`, h)
	if !second.Deduplicated || second.MessageID != first.MessageID {
		t.Fatalf("second publish %+v, want deduplicated with id %s", second, first.MessageID)
	}
	b.idle()
	if n := rc.count(); n != 1 {
		t.Fatalf("delivered %d times, want 1", n)
	}
	// Within the window even after delivery: QStash's documented 10 minutes.
	b.clock.Advance(10*time.Minute - time.Second)
	if again := b.publish(dest, `{}`, h); !again.Deduplicated {
		t.Fatalf("inside the window: %+v", again)
	}
	// After the window the id is forgotten: a new message, delivered again.
	b.clock.Advance(2 * time.Second)
	late := b.publish(dest, `{"eventId":"42"}`, h)
	if late.Deduplicated || late.MessageID == first.MessageID {
		t.Fatalf("after the window: %+v", late)
	}
	b.idle()
	if n := rc.count(); n != 2 {
		t.Fatalf("delivered %d times, want 2", n)
	}
	if st := b.sim.Stats(); st.Published != 2 || st.Deduplicated != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestContentBasedDeduplication(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	dest := rc.url("/x")
	on := map[string]string{"Upstash-Content-Based-Deduplication": "true", "Content-Type": "application/json"}
	first := b.publish(dest, `{"a":1}`, on)
	if dup := b.publish(dest, `{"a":1}`, on); !dup.Deduplicated || dup.MessageID != first.MessageID {
		t.Fatalf("same content: %+v", dup)
	}
	// Each of body, destination, Content-Type and forwarded headers counts.
	others := []struct {
		dest, body string
		header     map[string]string
	}{
		{dest, `{"a":2}`, on},
		{rc.url("/y"), `{"a":1}`, on},
		{dest, `{"a":1}`, map[string]string{"Upstash-Content-Based-Deduplication": "true", "Content-Type": "text/plain"}},
		{dest, `{"a":1}`, map[string]string{"Upstash-Content-Based-Deduplication": "true", "Content-Type": "application/json", "Upstash-Forward-X-Tenant": "7"}},
	}
	for i, o := range others {
		if r := b.publish(o.dest, o.body, o.header); r.Deduplicated {
			t.Errorf("variant %d deduplicated", i)
		}
	}
	// Without the header, identical content is two messages.
	b.publish(dest, `{"a":1}`, nil)
	b.publish(dest, `{"a":1}`, nil)
	b.idle()
	if n := rc.count(); n != 1+len(others)+2 {
		t.Fatalf("delivered %d, want %d", n, 1+len(others)+2)
	}
}
