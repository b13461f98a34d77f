package demo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

// Values of ChaosConfig.Faults (-faults) besides a list of FaultKinds.
const (
	// FaultsAll injects every kind: Faults, the default.
	FaultsAll = "all"
	// FaultsNone injects nothing; HubSpot's own rate limit still applies.
	FaultsNone = "none"
)

// FaultKinds name the groups of Faults a chaos run can inject, in the order
// the usage lists them. An injected 429 pauses every replica's budget for a
// ten-second window, so its pauses dominate outbound latency; leaving it out
// ("5xx,423,latency,partial,webhooks") lets the cost of a kill show.
var FaultKinds = []string{"5xx", "423", "429", "latency", "partial", "webhooks"}

// ParseFaults reads a -faults value: "all" (Faults), "none", or a comma list
// of FaultKinds, each injected at Faults' rate. It returns the faults and the
// value spelled canonically (kinds in FaultKinds order), for the report.
func ParseFaults(s string) (hubspotsim.Faults, string, error) {
	switch strings.TrimSpace(s) {
	case "", FaultsAll:
		return Faults, FaultsAll, nil
	case FaultsNone:
		return hubspotsim.Faults{}, FaultsNone, nil
	}
	chosen := map[string]bool{}
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(FaultKinds, k) {
			return hubspotsim.Faults{}, "", fmt.Errorf("-faults %q: unknown kind %q; write %s, %s, or a comma list of %s",
				s, k, FaultsAll, FaultsNone, strings.Join(FaultKinds, ", "))
		}
		chosen[k] = true
	}
	var f hubspotsim.Faults
	var kinds []string
	for _, k := range FaultKinds {
		if !chosen[k] {
			continue
		}
		kinds = append(kinds, k)
		switch k {
		case "5xx":
			f.Error500, f.Error502, f.Error503 = Faults.Error500, Faults.Error502, Faults.Error503
		case "423":
			f.Error423 = Faults.Error423
		case "429":
			f.Error429 = Faults.Error429
		case "latency":
			f.Latency = Faults.Latency
		case "partial":
			f.PartialFailure = Faults.PartialFailure
		case "webhooks":
			f.WebhookFailure, f.WebhookDuplicate = Faults.WebhookFailure, Faults.WebhookDuplicate
		}
	}
	return f, strings.Join(kinds, ","), nil
}
