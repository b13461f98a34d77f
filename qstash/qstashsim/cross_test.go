// The emulator's deliveries verify with hubsync's own verifier (package
// qstash), and hubsync's publish client is understood by the emulator.

package qstashsim

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/qstash"
)

// TestHubsyncClientAndVerifierAgainstTheEmulator publishes with hubsync's
// client (dedup id, flow control) and verifies each delivery with hubsync's
// verifier, signed with the current key and then with the next key.
func TestHubsyncClientAndVerifierAgainstTheEmulator(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.clock.Advance(-time.Until(b.clock.Now())) // to the wall clock, which hubsync's verifier reads
	verified := make(chan error, 4)
	var rc *receiver
	var dest string
	rc = newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		cur, next := b.sim.SigningKeys()
		v, err := qstash.NewVerifier(qstash.VerifierConfig{CurrentSigningKey: cur, NextSigningKey: next, URL: dest})
		if err == nil {
			_, err = v.VerifyRequest(r, rc.requests()[n].Body)
		}
		verified <- err
	})
	dest = rc.url("/qstash/hubspot")
	c, err := qstash.NewClient(qstash.Config{URL: b.sim.URL(), Token: b.sim.Token()})
	if err != nil {
		t.Fatal(err)
	}
	for i, next := range []bool{false, true} {
		b.sim.SetSignWithNext(next)
		id := fmt.Sprint("event-", i)
		res, err := c.Publish(context.Background(), qstash.Message{
			Destination: dest, Body: []byte(`{"eventId":"` + id + `"}`), DeduplicationID: id,
			FlowControl: qstash.FlowControl{Key: "hubspot", Rate: 150, Period: 10 * time.Second, Parallelism: 12},
		})
		if err != nil || res.MessageID == "" || res.Deduplicated {
			t.Fatalf("publish: %v %+v", err, res)
		}
		if err := testwait.Recv(t, "the delivery", verified); err != nil {
			t.Fatalf("hubsync's verifier refuses the emulator's signature (next key: %v): %v", next, err)
		}
		dup, err := c.Publish(context.Background(), qstash.Message{Destination: dest, Body: []byte(`{}`), DeduplicationID: id})
		if err != nil || !dup.Deduplicated || dup.MessageID != res.MessageID {
			t.Fatalf("a second publish of %s: %v %+v", id, err, dup)
		}
	}
	// The emulator counts a delivery once the receiver has answered, which is
	// after the receiver reported its verdict above.
	testwait.For(t, "both deliveries counted", func() bool { return b.sim.Stats().Delivered == 2 })
	if st := b.sim.Stats(); st.Delivered != 2 || st.Deduplicated != 2 || st.FlowControl["hubspot"].Rate != 150 {
		t.Fatalf("stats %+v", st)
	}
}
