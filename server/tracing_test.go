package server

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// tracedServer starts a server on SQLite whose spans go to an in-memory
// exporter as each ends.
func tracedServer(t *testing.T, cfg Config) (*Server, *hubspotsim.Server, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	db := dbtest.Migrated(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	cfg.DatabaseURL, cfg.Addr, cfg.HubSpotAPIBase = db.URL, "127.0.0.1:0", sim.URL()
	cfg.HubSpotAccessToken, cfg.HubSpotClientSecret, cfg.HubSpotAppID = hubspotsim.AccessTokenDefault, hubspotsim.ClientSecretDefault, "1000"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.TracerProvider = tp
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv, sim, exp
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// linkedEvents returns the event ids of s's links, each checked to point at
// the event's own trace.
func linkedEvents(t *testing.T, s tracetest.SpanStub) []string {
	t.Helper()
	var ids []string
	for _, l := range s.Links {
		id := attr(l.Attributes, eventtrace.AttrEventID)
		if id == "" {
			continue
		}
		if l.SpanContext.TraceID() != eventtrace.SpanContext(id).TraceID() {
			t.Errorf("%s links event %s in trace %s, not the event's trace %s", s.Name, id, l.SpanContext.TraceID(), eventtrace.SpanContext(id).TraceID())
		}
		ids = append(ids, id)
	}
	return ids
}

// checkEventSpan checks that s handles event id in the event's own trace and
// links to a span of cycles (the worker's cycle).
func checkEventSpan(t *testing.T, s tracetest.SpanStub, id string, cycles []tracetest.SpanStub) {
	t.Helper()
	want := eventtrace.SpanContext(id)
	if got := attr(s.Attributes, eventtrace.AttrEventID); got != id {
		t.Errorf("%s: %s = %q, want %q", s.Name, eventtrace.AttrEventID, got, id)
	}
	if s.SpanContext.TraceID() != want.TraceID() || s.Parent.SpanID() != want.SpanID() {
		t.Errorf("%s of event %s is in trace %s under %s, want trace %s under %s", s.Name, id,
			s.SpanContext.TraceID(), s.Parent.SpanID(), want.TraceID(), want.SpanID())
	}
	linked := false
	for _, l := range s.Links {
		for _, c := range cycles {
			linked = linked || l.SpanContext.Equal(c.SpanContext)
		}
	}
	if !linked {
		t.Errorf("%s of event %s does not link to its worker cycle", s.Name, id)
	}
}

// A webhook delivery links to the trace of each inbound event it stored; the
// SyncWorker handles each event in that trace (a span linked to its cycle,
// with its outcome), and applies it in a child span; the creation's HubSpot
// read is a client span under the cycle.
func TestTraceWebhookToApply(t *testing.T) {
	srv, sim, exp := tracedServer(t, Config{DisableOutboundWorker: true})
	if err := sim.SetWebhookURL("http://" + srv.Addr() + "/webhooks/hubspot"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.UserCreate("contacts", map[string]string{"email": "traced@example.com"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "an inbound apply span", func() bool { return len(spansNamed(exp, "hubsync.inbound.apply")) > 0 })
	// The spans of a cycle end with it: wait until every linked event's has.
	var ids []string
	testwait.For(t, "a span for every event a delivery linked", func() bool {
		ids = nil
		for _, d := range spansNamed(exp, "hubsync.webhook.delivery") {
			ids = append(ids, linkedEvents(t, d)...)
		}
		handled := map[string]tracetest.SpanStub{}
		for _, e := range spansNamed(exp, "hubsync.inbound.event") {
			handled[attr(e.Attributes, eventtrace.AttrEventID)] = e
		}
		// A cycle's span ends after its events' spans: wait for it too.
		ended := map[trace.SpanID]bool{}
		for _, c := range spansNamed(exp, "hubsync.inbound.cycle") {
			ended[c.SpanContext.SpanID()] = true
		}
		for _, id := range ids {
			e, ok := handled[id]
			if !ok || !slices.ContainsFunc(e.Links, func(l sdktrace.Link) bool { return ended[l.SpanContext.SpanID()] }) {
				return false
			}
		}
		return len(ids) > 0
	})

	cycles := spansNamed(exp, "hubsync.inbound.cycle")
	events := map[string]tracetest.SpanStub{}
	for _, e := range spansNamed(exp, "hubsync.inbound.event") {
		events[attr(e.Attributes, eventtrace.AttrEventID)] = e
	}
	applies := 0
	for _, id := range ids {
		if _, err := srv.st.Inbound().Get(context.Background(), id); err != nil {
			t.Fatalf("the linked event %s is not in the inbound queue: %v", id, err)
		}
		e := events[id]
		checkEventSpan(t, e, id, cycles)
		if attr(e.Attributes, eventtrace.AttrOutcome) == "" {
			t.Errorf("event span of %s has no outcome", id)
		}
		for _, a := range spansNamed(exp, "hubsync.inbound.apply") {
			if a.Parent.SpanID() == e.SpanContext.SpanID() {
				applies++
				if attr(a.Attributes, eventtrace.AttrEventID) != id || a.SpanContext.TraceID() != e.SpanContext.TraceID() {
					t.Errorf("apply span under event %s names event %q in trace %s", id, attr(a.Attributes, eventtrace.AttrEventID), a.SpanContext.TraceID())
				}
			}
		}
	}
	if applies == 0 {
		t.Error("no apply span is the child of a linked event's span")
	}
	// The creation's properties were read from HubSpot, in a client span of a cycle.
	var read bool
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindClient && slices.ContainsFunc(cycles, func(c tracetest.SpanStub) bool { return c.SpanContext.SpanID() == s.Parent.SpanID() }) {
			read = read || attr(s.Attributes, "http.response.status_code") == "200"
		}
	}
	if !read {
		t.Error("no HubSpot read span (200) under an inbound cycle")
	}
}

// A records API write links to the trace of its outbound event; the outbound
// worker handles the event in that trace, and the HubSpot call links to the
// event's span, with the HTTP request as the call's child.
func TestTraceRecordWriteToHubSpotCall(t *testing.T) {
	srv, sim, exp := tracedServer(t, Config{DisableWebhooks: true, DisableSyncWorker: true, APITokens: []string{testAPIToken}})
	resp, err := apiPost("http://"+srv.Addr()+"/api/records/contacts", strings.NewReader(`{"fields":{"email":"out-traced@example.com"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	testwait.For(t, "the contact in HubSpot and the call span", func() bool {
		return len(sim.Objects("contacts")) == 1 && len(spansNamed(exp, "hubsync.outbound.call")) > 0 &&
			len(spansNamed(exp, "hubsync.outbound.cycle")) > 0
	})

	writes := spansNamed(exp, "hubsync.records.write")
	if len(writes) != 1 {
		t.Fatalf("%d records write spans, want 1", len(writes))
	}
	ids := linkedEvents(t, writes[0])
	if len(ids) != 1 {
		t.Fatalf("the write links to events %v, want its one outbound event", ids)
	}
	id := ids[0]
	if ev, err := srv.st.Outbound().Get(context.Background(), id); err != nil || ev.Status != store.StatusProcessed {
		t.Fatalf("the linked outbound event %s: %+v, %v; want it processed", id, ev.QueueState, err)
	}

	var event tracetest.SpanStub
	for _, s := range spansNamed(exp, "hubsync.outbound.event") {
		if attr(s.Attributes, eventtrace.AttrEventID) == id {
			event = s
		}
	}
	if event.Name == "" {
		t.Fatalf("no outbound event span for %s", id)
	}
	checkEventSpan(t, event, id, spansNamed(exp, "hubsync.outbound.cycle"))
	if got := attr(event.Attributes, eventtrace.AttrOutcome); got != "completed" {
		t.Errorf("outbound event span outcome = %q, want completed", got)
	}

	var call tracetest.SpanStub
	for _, c := range spansNamed(exp, "hubsync.outbound.call") {
		for _, l := range c.Links {
			if l.SpanContext.Equal(event.SpanContext) && attr(l.Attributes, eventtrace.AttrEventID) == id {
				call = c
			}
		}
	}
	if call.Name == "" {
		t.Fatalf("no HubSpot call span links to the event's span")
	}
	var http []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID() == call.SpanContext.SpanID() && s.SpanKind == trace.SpanKindClient {
			http = append(http, s)
		}
	}
	if len(http) != 1 || attr(http[0].Attributes, "http.request.method") != http[0].Name[len("HTTP "):] ||
		!strings.HasPrefix(attr(http[0].Attributes, "http.response.status_code"), "2") {
		t.Fatalf("HTTP spans under the call: %+v; want one answered 2xx", http)
	}
}
