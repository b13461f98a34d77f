package demo

import (
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func TestParseFaults(t *testing.T) {
	t.Parallel()
	no429 := Faults
	no429.Error429 = 0
	for _, tc := range []struct {
		in, name string
		want     hubspotsim.Faults
	}{
		{"", FaultsAll, Faults},
		{"all", FaultsAll, Faults},
		{"none", FaultsNone, hubspotsim.Faults{}},
		{"5xx,423,latency,partial,webhooks", "5xx,423,latency,partial,webhooks", no429},
		{" webhooks , 5xx,5xx", "5xx,webhooks", hubspotsim.Faults{Error500: Faults.Error500, Error502: Faults.Error502, Error503: Faults.Error503,
			WebhookFailure: Faults.WebhookFailure, WebhookDuplicate: Faults.WebhookDuplicate}},
		{"429", "429", hubspotsim.Faults{Error429: Faults.Error429}},
		{"latency,partial,423", "423,latency,partial", hubspotsim.Faults{Error423: Faults.Error423, Latency: Faults.Latency, PartialFailure: Faults.PartialFailure}},
	} {
		got, name, err := ParseFaults(tc.in)
		if err != nil || got != tc.want || name != tc.name {
			t.Errorf("ParseFaults(%q) = %+v, %q, %v; want %+v, %q", tc.in, got, name, err, tc.want, tc.name)
		}
	}
	for _, in := range []string{"bogus", "5xx,", "all,429", "none,5xx", "NONE", "timeouts", "5xx;429"} {
		_, _, err := ParseFaults(in)
		if err == nil {
			t.Errorf("ParseFaults(%q) accepted", in)
			continue
		}
		// The message names the flag and every allowed value.
		for _, want := range append([]string{"-faults", FaultsAll, FaultsNone}, FaultKinds...) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseFaults(%q): %q does not name %q", in, err, want)
			}
		}
	}
}

func TestChaosConfigValidateFaults(t *testing.T) {
	t.Parallel()
	c := ChaosConfig{DatabaseURL: "postgres://x@127.0.0.1/db", Binary: "hubsync", Replicas: 1, Changes: 1}
	if err := c.validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	c.Faults = "5xx,nope"
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "Faults: -faults") {
		t.Fatalf("validate with Faults %q = %v; want an error naming Faults and -faults", c.Faults, err)
	}
}
