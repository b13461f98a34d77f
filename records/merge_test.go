package records

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// TestApplyMergeIntoLocallyDeletedSurvivor: HubSpot merges object 1 into 2
// while 2's local record has been deleted here (its archive on its way, or
// done). The archive removes the merged object, so the merged record goes
// too, whether the merge happened in HubSpot before or after the local delete
// and whether the archive already dropped the link. Re-pointing it to 2 would
// leave a live record linked to an archived object.
func TestApplyMergeIntoLocallyDeletedSurvivor(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		for _, mergeAfter := range []bool{false, true} {
			for _, archived := range []bool{false, true} {
				t.Run(fmt.Sprintf("merge_after_delete=%v/archived=%v", mergeAfter, archived), func(t *testing.T) {
					b := setup(t, d, Config{})
					ctx := context.Background()
					t0 := b.clock.Now().Add(-time.Hour)
					a := mustApply(t, b, change(store.EventCreate, "1", t0, map[string]any{"email": "a@example.com", "first_name": "A"}))
					s := mustApply(t, b, change(store.EventCreate, "2", t0, map[string]any{"email": "b@example.com", "first_name": "B"}))
					if err := b.svc.Delete(ctx, "contacts", s.RecordID, 1); err != nil {
						t.Fatal(err)
					}
					if archived {
						// The outbound worker archived 2 and dropped the link.
						if err := b.links.Unlink(ctx, "hubspot", "contacts", s.RecordID); err != nil {
							t.Fatal(err)
						}
					}
					at := b.clock.Now().Add(-time.Second)
					if mergeAfter {
						at = b.clock.Now().Add(time.Second)
					}
					mr := change(store.EventMerge, "2", at, map[string]any{"first_name": "B"})
					mr.MergedIDs = []string{"1"}
					for range 2 { // a redelivery changes nothing
						if res := mustApply(t, b, mr); res.Outcome != apply.Merged {
							t.Fatalf("merge = %+v", res)
						}
						if _, err := b.svc.Get(ctx, "contacts", a.RecordID); !errors.Is(err, ErrNotFound) {
							t.Fatalf("the record merged into a locally deleted survivor is still live (%v)", err)
						}
						if id, ok, err := b.links.LookupRecord(ctx, "hubspot", "contacts", "2"); err != nil || (ok && id == a.RecordID) {
							t.Fatalf("merged record re-pointed to the locally deleted survivor: %q %v %v", id, ok, err)
						}
						if n := b.count(t, "hubsync_record"); n != 0 {
							t.Fatalf("%d records live after the merge", n)
						}
						tomb, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", "2")
						if err != nil || !ok || tomb.Kind != links.TombstoneLocalDeleted {
							t.Fatalf("survivor's tombstone = %+v %v %v; want the local delete's", tomb, ok, err)
						}
					}
					// A later change of either id stays stale: nothing comes back.
					for _, ext := range []string{"1", "2"} {
						if res := mustApply(t, b, change(store.EventUpdate, ext, at.Add(time.Minute), map[string]any{"first_name": "X"})); res.Outcome != apply.Stale {
							t.Fatalf("update of %s after the merge = %+v; want stale", ext, res)
						}
					}
				})
			}
		}
	})
}
