package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/server"
)

func TestNamingSettingsRetellsConfigErrors(t *testing.T) {
	_, err := server.New(server.Config{Addr: "8080", MetricsAddr: "9090", RateLimit: -1})
	got := namingSettings(err)
	if !errors.Is(got, server.ErrConfig) {
		t.Fatalf("namingSettings(%v) = %v, want it to still match server.ErrConfig", err, got)
	}
	for _, want := range []string{"HUBSYNC_ADDR", "HUBSYNC_METRICS_ADDR", "HUBSYNC_HUBSPOT_RATE_LIMIT", "HUBSPOT_ACCESS_TOKEN", "HUBSPOT_CLIENT_SECRET", "-webhooks=false", "-sync-worker=false"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("%q does not name %s", got, want)
		}
	}
	for _, field := range []string{"Addr ", "MetricsAddr", "RateLimit", "HubSpotAccessToken", "DisableWebhooks"} {
		if strings.Contains(got.Error(), field) {
			t.Errorf("%q still names the Config field %s", got, field)
		}
	}
	if namingSettings(nil) != nil {
		t.Error("namingSettings(nil) != nil")
	}
}

func TestNamingSettingsNamesQStashSettings(t *testing.T) {
	_, err := server.New(server.Config{DisableWebhooks: true, HubSpotAccessToken: "x", Dispatch: server.DispatchQStash,
		FlowControlRate: -1, FlowControlParallelism: -1, CronSecret: "short"})
	got := namingSettings(err)
	for _, want := range []string{"QSTASH_URL", "QSTASH_TOKEN", "QSTASH_CURRENT_SIGNING_KEY", "HUBSYNC_WORKER_URL",
		"HUBSYNC_FLOW_CONTROL_RATE", "HUBSYNC_FLOW_CONTROL_PARALLELISM", "CRON_SECRET"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("%q does not name %s", got, want)
		}
	}
	_, err = server.New(server.Config{DisableWebhooks: true, HubSpotAccessToken: "x", Dispatch: "push"})
	if got := namingSettings(err); !strings.Contains(got.Error(), "HUBSYNC_DISPATCH") {
		t.Errorf("%q does not name HUBSYNC_DISPATCH", got)
	}
}
