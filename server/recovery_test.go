package server

import (
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/relay"
)

// TestDefaultsRecoverWithinIssue16: with serve's defaults, the longest lease a
// SIGKILLed replica can leave on each queue is well under the 30 s recovery
// goal of issue 16, leaving room for the next claim and the work. Before,
// the outbound worker assumed the client's 30 s timeout (46 s of lease before
// a call), the inbound lease was 30 s and the relay's a minute.
func TestDefaultsRecoverWithinIssue16(t *testing.T) {
	const most = 16 * time.Second
	call := outboundCallTimeout(hubspot.TimeoutDefault)
	for _, q := range []struct {
		name  string
		lease time.Duration
	}{
		// Before a call the outbound worker extends the lease to the call's
		// deadline plus half of it to store the result, plus a second.
		{"outbound", max(outbound.LeaseDurationDefault, call*3/2+time.Second)},
		{"inbound", inbound.LeaseDurationDefault},
		{"internal (relay)", relay.LeaseDurationDefault},
	} {
		if q.lease > most {
			t.Errorf("%s: a killed replica leaves up to %s of lease; want at most %s", q.name, q.lease, most)
		}
	}
	if got := outboundCallTimeout(5 * time.Second); got != 5*time.Second {
		t.Errorf("with HubSpotTimeout 5s the outbound calls time out after %s; want 5s (never later than the client)", got)
	}
}
