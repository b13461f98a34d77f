package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The standard OpenTelemetry variables `serve` reads itself; the exporter and
// the SDK read the rest (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _INSECURE,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, …).
const (
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envOTELSDKDisabled    = "OTEL_SDK_DISABLED"
	envOTELTracesExporter = "OTEL_TRACES_EXPORTER"
)

// tracing builds the tracer provider of `serve`: an OTLP/HTTP exporter when
// OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ form) is set, else nil (no
// tracing, no cost). shutdown flushes the spans still buffered.
func tracing(ctx context.Context, getenv func(string) string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	endpointVar := envOTLPTracesEndpoint
	endpoint := strings.TrimSpace(getenv(endpointVar))
	if endpoint == "" {
		endpointVar, endpoint = envOTLPEndpoint, strings.TrimSpace(getenv(envOTLPEndpoint))
	}
	if endpoint == "" || strings.EqualFold(getenv(envOTELSDKDisabled), "true") || strings.EqualFold(getenv(envOTELTracesExporter), "none") {
		return nil, none, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, none, fmt.Errorf("%s=%q is not an http(s) URL; set the collector's OTLP/HTTP address, e.g. http://otel-collector:4318, or unset it to turn tracing off", endpointVar, endpoint)
	}
	for _, v := range []string{envOTLPTracesProtocol, envOTLPProtocol} {
		if p := strings.TrimSpace(getenv(v)); p != "" {
			if p != "http/protobuf" && p != "http/json" {
				return nil, none, fmt.Errorf("%s=%q is not supported: hubsync exports OTLP over HTTP; set http/protobuf (the collector's port 4318) or unset it", v, p)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("tracing: OTLP exporter for %s: %w", endpointVar, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", "hubsync")))
	if err == nil {
		// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
		var env *resource.Resource
		if env, err = resource.New(ctx, resource.WithFromEnv()); err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, none, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES/OTEL_SERVICE_NAME: %w", err)
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}
