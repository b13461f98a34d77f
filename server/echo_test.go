package server

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// TestWebhookEchoesCountedAtReceipt checks the figures of a delivery holding
// the echo of one of our writes and a user's change: the echo is counted as
// an echo, enqueued and processed at receipt and never claimed; the user's
// change goes through the SyncWorker.
func TestWebhookEchoesCountedAtReceipt(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, DisableOutboundWorker: true}) // app id "1000"
	base := "http://" + srv.Addr()
	now := time.Now()
	if code, answer := deliverSigned(t, base,
		hubspot.WebhookEvent{EventID: 1, PortalID: hubspotsim.PortalIDDefault, OccurredAt: now.UnixMilli(), SubscriptionType: "contact.propertyChange", ObjectID: 7, PropertyName: "firstname",
			PropertyValue: "Ours", ChangeSource: "INTEGRATION", SourceID: "1000"},
		hubspot.WebhookEvent{EventID: 2, PortalID: hubspotsim.PortalIDDefault, OccurredAt: now.UnixMilli(), SubscriptionType: "contact.propertyChange", ObjectID: 7, PropertyName: "lastname",
			PropertyValue: "Theirs", ChangeSource: "CRM_UI"}); code != http.StatusOK {
		t.Fatalf("delivery answered %d %s", code, answer)
	}

	var metrics string
	testwait.For(t, "both events processed", func() bool {
		_, metrics = get(t, base+"/metrics")
		return sample(metrics, `hubsync_events_processed_total{direction="inbound",key="hubspot"}`) == 2
	})
	if v := sample(metrics, MetricWebhookEchoes); v != 1 {
		t.Errorf("%s = %v, want 1", MetricWebhookEchoes, v)
	}
	if v := sample(metrics, `hubsync_events_enqueued_total{direction="inbound",key="hubspot"}`); v != 2 {
		t.Errorf("inbound enqueued = %v, want 2 (the echo is stored, for audit)", v)
	}
	if v := sample(metrics, `hubsync_events_claimed_total{direction="inbound",key="hubspot"}`); v < 1 {
		t.Errorf("inbound claimed = %v, want the user's change claimed", v)
	}
	rows, err := srv.st.DB().QueryContext(context.Background(), "SELECT Attempt, Status, Payload FROM _System_IntegrationInbound")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	echoes := 0
	for rows.Next() {
		var (
			attempt int
			status  string
			payload []byte
		)
		if err := rows.Scan(&attempt, &status, &payload); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(payload, []byte(`"echo":true`)) {
			echoes++
			if attempt != 0 || status != string(store.StatusProcessed) {
				t.Errorf("echo stored %s with %d claims, want processed and never claimed", status, attempt)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if echoes != 1 {
		t.Errorf("%d echoes stored, want 1", echoes)
	}
}
