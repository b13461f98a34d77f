package eventtrace

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestSpanContextIsTheEventsAlone(t *testing.T) {
	a, again, b := SpanContext("0193-a"), SpanContext("0193-a"), SpanContext("0193-b")
	if !a.IsValid() || !a.IsSampled() || !a.IsRemote() {
		t.Fatalf("SpanContext = %+v; want a valid, sampled, remote context", a)
	}
	if !a.Equal(again) {
		t.Fatal("the same event id gives two span contexts: another process could not find the event's trace")
	}
	if a.TraceID() == b.TraceID() || a.SpanID() == b.SpanID() {
		t.Fatal("two event ids share a trace")
	}
}

func TestStartJoinsTheEventTraceAndLinksTheCycle(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := Tracer(tp)
	ctx, cycle := tr.Start(context.Background(), "cycle")
	_, span := Start(ctx, tr, "apply", "ev-1")
	End(span, "created", nil)
	cycle.End()
	got := exp.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans, want 2", len(got))
	}
	apply := got[0]
	want := SpanContext("ev-1")
	if apply.SpanContext.TraceID() != want.TraceID() || apply.Parent.SpanID() != want.SpanID() {
		t.Fatalf("apply span in trace %s under %s; want the event's trace %s under %s",
			apply.SpanContext.TraceID(), apply.Parent.SpanID(), want.TraceID(), want.SpanID())
	}
	if len(apply.Links) != 1 || !apply.Links[0].SpanContext.Equal(got[1].SpanContext) {
		t.Fatalf("apply span links %+v; want the cycle %s", apply.Links, got[1].SpanContext.SpanID())
	}
	if Tracer(nil) == nil {
		t.Fatal("Tracer(nil) is nil; want a tracer that records nothing")
	}
	if _, s := Start(context.Background(), Tracer(nil), "apply", "ev-1"); s.IsRecording() {
		t.Fatal("a nil TracerProvider records spans")
	}
}

// The library takes a TracerProvider; only cmd/hubsync links the SDK and an
// exporter.
func TestLibraryLinksNoExporter(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	pkgs := []string{"server", "inbound", "outbound", "records", "ops", "subscriptions"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/hubsync/hubsync/"+p)
	}
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	sdk := regexp.MustCompile(`^go\.opentelemetry\.io/otel/(sdk|exporters)(/|$)`)
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		if sdk.MatchString(dep) {
			bad = append(bad, dep)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s link %v; take a trace.TracerProvider and leave the SDK to cmd/hubsync", strings.Join(pkgs, ", "), bad)
	}
}
