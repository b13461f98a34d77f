package main

import (
	"context"
	"strings"
	"testing"
)

func TestTracingSettings(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		env     func(string) string
		on      bool
		wantErr string
	}{
		{"unset: off", env(), false, ""},
		{"endpoint: on", env(envOTLPEndpoint, "http://127.0.0.1:4318"), true, ""},
		{"traces endpoint: on", env(envOTLPTracesEndpoint, "http://127.0.0.1:4318/v1/traces"), true, ""},
		{"SDK disabled", env(envOTLPEndpoint, "http://127.0.0.1:4318", envOTELSDKDisabled, "true"), false, ""},
		{"exporter none", env(envOTLPEndpoint, "http://127.0.0.1:4318", envOTELTracesExporter, "none"), false, ""},
		{"no scheme", env(envOTLPEndpoint, "collector:4318"), false, envOTLPEndpoint + `="collector:4318" is not an http(s) URL`},
		{"bad traces endpoint", env(envOTLPEndpoint, "http://ok:4318", envOTLPTracesEndpoint, "::"), false, envOTLPTracesEndpoint},
		{"grpc", env(envOTLPEndpoint, "http://127.0.0.1:4317", envOTLPProtocol, "grpc"), false, envOTLPProtocol + `="grpc" is not supported`},
		{"traces protocol wins", env(envOTLPEndpoint, "http://127.0.0.1:4318", envOTLPProtocol, "grpc", envOTLPTracesProtocol, "http/protobuf"), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, shutdown, err := tracing(context.Background(), tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != tc.on {
				t.Fatalf("tracer provider = %v, want on=%v", tp, tc.on)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown with no spans: %v", err)
			}
		})
	}
}
