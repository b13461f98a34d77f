package qstashsim

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaultDropRetriesThenDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: Faults{Drop: 1}})
	rc := newReceiver(t, nil)
	pr := b.publish(rc.url("/w"), "x", map[string]string{"Upstash-Retries": "2"})
	b.idle()
	if n := rc.count(); n != 0 {
		t.Fatalf("dropped attempts reached the receiver %d times", n)
	}
	if m := b.info(pr.MessageID); m.State != "ERROR" || m.Retried != 2 {
		t.Fatalf("message %+v", m)
	}
	if st := b.sim.Stats(); st.Dropped != 3 || st.Attempts != 3 || st.DLQ != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFaultDuplicateDeliversTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	rc := newReceiver(t, nil)
	if a := b.do(http.MethodPut, "/_sim/qstash/faults", []byte(`{"duplicate":1}`), nil); a.status != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", a.status, a.body)
	}
	pr := b.publish(rc.url("/w"), "x", nil)
	b.idle()
	reqs := rc.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d deliveries, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("Upstash-Message-Id") != pr.MessageID || r.Header.Get("Upstash-Retried") != "0" || string(r.Body) != "x" {
			t.Fatalf("duplicate differs: %+v", r.Header)
		}
	}
	if st := b.sim.Stats(); st.Duplicated != 1 || st.Delivered != 1 || st.Attempts != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFaultDelayStillDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: Faults{Delay: 1, DelayDuration: time.Millisecond}})
	rc := newReceiver(t, nil)
	pr := b.publish(rc.url("/w"), "x", nil)
	b.idle()
	if st := b.sim.Stats(); st.Delayed != 1 || st.Delivered != 1 || b.info(pr.MessageID).State != "DELIVERED" {
		t.Fatalf("stats %+v", st)
	}
}

func TestFaultsControlAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	a := b.do(http.MethodPut, "/_sim/qstash/faults", []byte(`{"drop":0.1,"delay":0.2,"delayDuration":"50ms","duplicate":0.3}`), nil)
	if a.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	if f := b.sim.CurrentFaults(); f != (Faults{Drop: 0.1, Delay: 0.2, DelayDuration: 50 * time.Millisecond, Duplicate: 0.3}) {
		t.Fatalf("faults %+v", f)
	}
	for body, want := range map[string]string{
		`{"drop":2}`:                  "drop must be a probability",
		`{"delay":0.5}`:               "needs a delayDuration",
		`{"delayDuration":"forever"}`: "delayDuration",
		`{"dorp":0.1}`:                "unknown field",
		`[`:                           "unexpected EOF",
		strings.Repeat(" ", 70<<10):   "too large",
	} {
		a := b.do(http.MethodPut, "/_sim/qstash/faults", []byte(body), nil)
		if a.status != http.StatusBadRequest && a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("PUT %.20q: %d, want 400/413", body, a.status)
			continue
		}
		if msg := a.errorText(t); !strings.Contains(msg, want) {
			t.Errorf("PUT %.20q: %q does not contain %q", body, msg, want)
		}
	}
	// Refused bodies changed nothing.
	if f := b.sim.CurrentFaults(); f.Drop != 0.1 {
		t.Fatalf("faults changed by a refused PUT: %+v", f)
	}
	var got Faults
	b.do(http.MethodGet, "/_sim/qstash/faults", nil, nil).decode(t, &got)
	if got.DelayDuration != 50*time.Millisecond {
		t.Fatalf("GET faults %+v", got)
	}
	// Stats over HTTP, and reset.
	var st Stats
	b.do(http.MethodGet, "/_sim/qstash/stats", nil, nil).decode(t, &st)
	if st.MaxParallelism == nil {
		t.Fatalf("stats %+v", st)
	}
	b.publish(newReceiver(t, nil).url("/w"), "x", map[string]string{"Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": "rate=150, period=10s"})
	a = b.do(http.MethodGet, "/_sim/qstash/stats", nil, nil)
	if !strings.Contains(string(a.body), `"flowControl":{"k":{"rate":150,"period":"10s"}}`) {
		t.Fatalf("stats JSON %s", a.body)
	}
	a.decode(t, &st) // and it reads back
	if st.FlowControl["k"] != (FlowControl{Rate: 150, Period: 10 * time.Second}) {
		t.Fatalf("stats read back: %+v", st.FlowControl)
	}
	if a := b.do(http.MethodPost, "/_sim/qstash/stats/reset", nil, nil); a.status != http.StatusNoContent {
		t.Fatalf("reset: %d", a.status)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{DelayScale: -1}, "DelayScale"},
		{Config{MaxRetries: -1}, "MaxRetries"},
		{Config{DefaultRetries: 50, MaxRetries: 10}, "raise MaxRetries"},
		{Config{CurrentSigningKey: "sig_a", NextSigningKey: "sig_a"}, "must differ"},
		{Config{Faults: Faults{Duplicate: -0.5}}, "Faults: duplicate"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}
