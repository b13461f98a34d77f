package drift_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// deletingReader deletes a local record while the scan's read of its
// linked objects is in flight, as a concurrent records API delete would.
type deletingReader struct {
	drift.Reader
	recs *records.Service
	id   string
}

func (r *deletingReader) BatchReadWithHistory(ctx context.Context, t hubspot.ObjectType, ids []string, properties, history []string) (*hubspot.BatchResult, error) {
	res, err := r.Reader.BatchReadWithHistory(ctx, t, ids, properties, history)
	if r.id != "" {
		rec, gerr := r.recs.Get(ctx, "contacts", r.id)
		if gerr == nil {
			_ = r.recs.Delete(ctx, "contacts", r.id, rec.Version)
		}
		r.id = ""
	}
	return res, err
}

// TestRecordDeletedDuringScanWithAdditionalEmails: a record deleted
// after its page was read is skipped by the field repairs ("deleted since
// the page was read"); the new hold of hs_additional_emails must not fail
// the whole scan for it either.
func TestRecordDeletedDuringScanWithAdditionalEmails(t *testing.T) {
	b := setup(t, store.SQLite, drift.Config{})
	frank, fid := b.contact(t, "frank@example.com", "Frank")
	mergeInHubSpot(t, b, fid, "eve@example.com")
	sc, err := drift.New(drift.Config{Store: b.st, Records: b.recs, AppID: strconv.Itoa(appID), Budget: b.budget,
		HubSpot: &deletingReader{Reader: b.hs, recs: b.recs, id: frank.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		if _, err := sc.Run(context.Background(), drift.Options{DryRun: dry}); err != nil {
			t.Fatalf("drift run (dry %v) with a record deleted during the scan: %v", dry, err)
		}
	}
}
