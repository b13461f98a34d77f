package qstashsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func Test489NonRetryableGoesToTheDLQAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Path == "/permanent" {
			w.Header().Set("Upstash-NonRetryable-Error", "true")
		}
		w.WriteHeader(489)
		_, _ = w.Write([]byte("event 9 refused"))
	})
	perm := b.publish(rc.url("/permanent"), "x", map[string]string{"Upstash-Retries": "5"})
	// 489 without the header is an ordinary failure, retried.
	plain := b.publish(rc.url("/plain"), "y", map[string]string{"Upstash-Retries": "1"})
	b.idle()
	if m := b.info(perm.MessageID); m.State != "ERROR" || m.Deliveries != 1 || m.Retried != 0 {
		t.Fatalf("non-retryable: %+v", m)
	}
	if m := b.info(plain.MessageID); m.State != "ERROR" || m.Deliveries != 2 || m.Retried != 1 {
		t.Fatalf("489 without the header: %+v", m)
	}
	dlq := b.sim.DLQ()
	if len(dlq) != 2 || dlq[0].MessageID != perm.MessageID || dlq[0].ResponseStatus != 489 || dlq[0].ResponseBody != "event 9 refused" || dlq[0].ResponseHeader.Get("Upstash-NonRetryable-Error") != "true" {
		t.Fatalf("dlq %+v", dlq)
	}
	if st := b.sim.Stats(); st.NonRetryable != 1 || st.DLQ != 2 || st.DLQSize != 2 {
		t.Fatalf("stats %+v", st)
	}
}

type dlqPage struct {
	Messages []DLQMessage `json:"messages"`
	Cursor   string       `json:"cursor"`
}

func TestDLQAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	var healthy atomic.Bool
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	var ids []string
	// One at a time: the DLQ is in the order messages failed.
	for _, body := range []string{"a", "b", "c"} {
		ids = append(ids, b.publish(rc.url("/w"), body, map[string]string{"Upstash-Retries": "0", "Upstash-Forward-X-Kind": body}).MessageID)
		b.idle()
	}
	b.publish(rc.url("/other"), "\xff\xfe", map[string]string{"Upstash-Retries": "0"})
	b.idle()

	// Paging, earliest first, with an opaque cursor.
	var all []DLQMessage
	cursor := ""
	for range 10 {
		a := b.do(http.MethodGet, "/v2/dlq?count=2&cursor="+url.QueryEscape(cursor), nil, nil)
		if a.status != http.StatusOK {
			t.Fatalf("list: %d %s", a.status, a.body)
		}
		var p dlqPage
		a.decode(t, &p)
		all = append(all, p.Messages...)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	if len(all) != 4 || all[0].MessageID != ids[0] || all[1].MessageID != ids[1] || all[2].MessageID != ids[2] {
		t.Fatalf("listed %+v", all)
	}
	if all[0].Body != "a" || all[0].Header.Get("X-Kind") != "a" || all[0].ResponseStatus != 500 || all[0].MaxRetries != 0 || all[0].URL != rc.url("/w") {
		t.Fatalf("entry %+v", all[0])
	}
	if all[3].Body != "" || string(all[3].BodyBase64) != "\xff\xfe" {
		t.Fatalf("a non-UTF-8 body: %+v", all[3])
	}
	var p dlqPage
	b.do(http.MethodGet, "/v2/dlq?url="+url.QueryEscape(rc.url("/other")), nil, nil).decode(t, &p)
	if len(p.Messages) != 1 || p.Cursor != "" {
		t.Fatalf("filtered by url: %+v", p)
	}
	for _, q := range []string{"count=0", "count=x", "cursor=abc", "responseStatus=x"} {
		if a := b.do(http.MethodGet, "/v2/dlq?"+q, nil, nil); a.status != http.StatusBadRequest {
			t.Errorf("list ?%s: %d, want 400", q, a.status)
		}
	}

	// Get and delete.
	var got DLQMessage
	a := b.do(http.MethodGet, "/v2/dlq/"+all[1].DLQID, nil, nil)
	a.decode(t, &got)
	if a.status != http.StatusOK || got.MessageID != ids[1] {
		t.Fatalf("get: %d %s", a.status, a.body)
	}
	if a := b.do(http.MethodDelete, "/v2/dlq/"+all[1].DLQID, nil, nil); a.status != http.StatusOK {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if a := b.do(m, "/v2/dlq/"+all[1].DLQID, nil, nil); a.status != http.StatusNotFound {
			t.Fatalf("%s after delete: %d", m, a.status)
		}
	}

	// Retry: a new message with the same body and headers, the entry gone.
	healthy.Store(true)
	before := rc.count()
	if a := b.do(http.MethodPost, "/v2/dlq/retry/"+all[0].DLQID, nil, map[string]string{"Upstash-Retries": "nine"}); a.status != http.StatusBadRequest {
		t.Fatalf("retry with a bad override: %d", a.status)
	}
	a = b.do(http.MethodPost, "/v2/dlq/retry/"+all[0].DLQID, nil, map[string]string{"Upstash-Retries": "2"})
	var pr PublishResponse
	a.decode(t, &pr)
	if a.status != http.StatusCreated || pr.MessageID == "" || pr.MessageID == ids[0] || pr.Deduplicated {
		t.Fatalf("retry: %d %s", a.status, a.body)
	}
	b.idle()
	reqs := rc.requests()
	if len(reqs) != before+1 || string(reqs[before].Body) != "a" || reqs[before].Header.Get("X-Kind") != "a" {
		t.Fatalf("retried delivery: %d requests, last %+v", len(reqs), reqs[len(reqs)-1])
	}
	if m := b.info(pr.MessageID); m.State != "DELIVERED" || m.MaxRetries != 2 {
		t.Fatalf("retried message %+v", m)
	}
	if a := b.do(http.MethodPost, "/v2/dlq/retry/"+all[0].DLQID, nil, nil); a.status != http.StatusNotFound {
		t.Fatalf("second retry of one entry: %d", a.status)
	}
	if n := len(b.sim.DLQ()); n != 2 {
		t.Fatalf("%d entries left, want 2", n)
	}

	// GET /v2/messages/{id} shows a message as QStash does.
	var m Message
	a = b.do(http.MethodGet, "/v2/messages/"+pr.MessageID, nil, nil)
	if err := json.Unmarshal(a.body, &m); err != nil || m.MessageID != pr.MessageID || m.Body != "a" {
		t.Fatalf("message: %d %s", a.status, a.body)
	}
	if a := b.do(http.MethodGet, "/v2/messages/msg_none", nil, nil); a.status != http.StatusNotFound {
		t.Fatalf("unknown message: %d", a.status)
	}
	for _, path := range []string{"/v2/schedules", "/v2/topics/x", "/_sim/qstash/nothing"} {
		a := b.do(http.MethodGet, path, nil, nil)
		if a.status != http.StatusNotFound || !strings.Contains(a.errorText(t), "no") {
			t.Errorf("GET %s: %d %s, want a JSON 404", path, a.status, a.body)
		}
	}
}
