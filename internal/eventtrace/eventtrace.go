// Package eventtrace links the spans on either side of hubsync's queues by
// event id.
//
// The queues carry no trace context (no column holds one), and the span that
// handles an event may run in another process, minutes later. So the link is
// keyed on the event id alone: every event has a trace of its own whose id is
// derived from the event id (SpanContext). The span that enqueues an event (a
// webhook delivery, a records API write) adds a link to that context; the
// span that later handles the event (its apply, its outbound push) starts in
// it, as the child of the derived span context, and links back to the
// worker's cycle span. A tracing back end then follows the link from the
// delivery or the write to the event's trace, in whichever process it ran.
// Every span also carries the event id as AttrEventID, to search by.
package eventtrace

import (
	"context"
	"crypto/sha256"

	"go.opentelemetry.io/otel/codes"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// AttrEventID is the attribute naming the queued event a span or a link is
// about.
const AttrEventID = "hubsync.event_id"

// InstrumentationName names hubsync's tracers.
const InstrumentationName = "github.com/hubsync/hubsync"

// Tracer returns hubsync's tracer of tp; a nil tp traces nothing.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(InstrumentationName)
}

// SpanContext is the span context of the event's own trace: the same for the
// same event id in every process. It is sampled, so an enqueue's link is
// followed by the handling side whatever its sampler decides for new traces
// (the default ParentBased sampler honours it).
func SpanContext(eventID string) trace.SpanContext {
	sum := sha256.Sum256([]byte("hubsync.event:" + eventID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// Link is the link from a span that enqueued the event to the event's trace.
func Link(eventID string) trace.Link {
	return trace.Link{SpanContext: SpanContext(eventID), Attributes: []attribute.KeyValue{attribute.String(AttrEventID, eventID)}}
}

// LinkEnqueued adds to the span in ctx a link to the event's trace; nothing
// when ctx holds no recording span.
func LinkEnqueued(ctx context.Context, eventID string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddLink(Link(eventID))
	}
}

// Start starts the span handling the event, in the event's trace. The span in
// ctx (the worker's cycle), if any, becomes a link rather than the parent.
func Start(ctx context.Context, tr trace.Tracer, name, eventID string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if _, off := tr.(noop.Tracer); off {
		// Tracing is off (the default): skip the work, whose cost every
		// event would pay.
		return ctx, trace.SpanFromContext(ctx)
	}
	opts := []trace.SpanStartOption{
		trace.WithAttributes(append(attrs, attribute.String(AttrEventID, eventID))...),
		trace.WithSpanKind(trace.SpanKindConsumer),
	}
	if cycle := trace.SpanContextFromContext(ctx); cycle.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: cycle}))
	}
	return tr.Start(trace.ContextWithRemoteSpanContext(ctx, SpanContext(eventID)), name, opts...)
}

// End ends span, recording outcome (when not empty) as AttrOutcome and err as
// the span's error.
func End(span trace.Span, outcome string, err error) {
	if outcome != "" {
		span.SetAttributes(attribute.String(AttrOutcome, outcome))
	}
	Fail(span, err)
	span.End()
}

// AttrOutcome says what handling the event did (created, updated, stale...).
const AttrOutcome = "hubsync.outcome"

// Fail records err, when not nil, as span's error.
func Fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
