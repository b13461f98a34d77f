package records

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// Eve's contact is merged into Frank's, then Frank's into George's (each
// survivor with its own local record). HubSpot keeps eve@ and frank@ on
// George's contact. A new local contact with eve@ would be upserted onto
// George's contact, yet the alias still names Frank's deleted record.
// Eve merged into Frank, then Frank into George: HubSpot keeps eve@ and
// frank@ on George's contact, so both stay held by George's record.
func TestEmailAliasFollowsAChainedMerge(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		ctx := context.Background()
		t0 := b.clock.Now().Add(-time.Hour)
		mustApply(t, b, change(store.EventCreate, "1001", t0, map[string]any{"email": "frank@example.com"}))
		mustApply(t, b, change(store.EventCreate, "1002", t0, map[string]any{"email": "eve@example.com"}))
		george := mustApply(t, b, change(store.EventCreate, "1003", t0, map[string]any{"email": "george@example.com"}))
		m1 := change(store.EventMerge, "1001", t0.Add(time.Minute), map[string]any{"email": "frank@example.com"})
		m1.MergedIDs = []string{"1002"}
		if res := mustApply(t, b, m1); res.Outcome != apply.Merged {
			t.Fatalf("merge 1 = %+v", res)
		}
		m2 := change(store.EventMerge, "1003", t0.Add(2*time.Minute), map[string]any{"email": "george@example.com"})
		m2.MergedIDs = []string{"1001"}
		if res := mustApply(t, b, m2); res.Outcome != apply.Merged {
			t.Fatalf("merge 2 = %+v", res)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "frank@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("insert frank@ after Frank merged into George: %v; want ErrEmailTaken", err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "eve@example.com"}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), george.RecordID) {
			t.Fatalf("insert eve@ after Eve->Frank->George: %v; want ErrEmailTaken naming George's record %s", err, george.RecordID)
		}
	})
}

// Frank's contact (with a local record) is merged into Zed's, which has no
// local record here: Frank's record is re-pointed to Zed's contact and takes
// Zed's email. HubSpot keeps frank@ on Zed's contact (hs_additional_emails),
// but no alias is kept for it (MergedAway runs only when the merged record
// is deleted), so a new local contact with frank@ is upserted onto Zed's.
// Frank's contact merged into Zed's, which has no local record: Frank's record
// is re-pointed to Zed's contact and takes zed@, while HubSpot keeps frank@
// on it too; frank@ stays held by that record.
func TestEmailAliasKeptWhenTheMergedRecordIsRepointed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		ctx := context.Background()
		t0 := b.clock.Now().Add(-time.Hour)
		frank := mustApply(t, b, change(store.EventCreate, "1001", t0, map[string]any{"email": "frank@example.com"}))
		m := change(store.EventMerge, "1005", t0.Add(time.Minute), map[string]any{"email": "zed@example.com"})
		m.MergedIDs = []string{"1001"}
		if res := mustApply(t, b, m); res.Outcome != apply.Merged || res.RecordID != frank.RecordID {
			t.Fatalf("merge = %+v; want Frank's record re-pointed", res)
		}
		rec, err := b.svc.Get(ctx, "contacts", frank.RecordID)
		if err != nil || rec.Fields["email"] != "zed@example.com" {
			t.Fatalf("re-pointed record = %+v, %v", rec, err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "frank@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("insert frank@ after Frank's contact was merged into Zed's: %v; want ErrEmailTaken naming %s", err, frank.RecordID)
		}
	})
}

// A merge of a contact whose email is longer than MaxAliasEmailLength (the
// records API accepts it) applies: no alias is kept, rather than the merge
// failing at every retry and holding the survivor's later changes.
func TestMergeOfAVeryLongEmailApplies(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		t0 := b.clock.Now().Add(-time.Hour)
		long := strings.Repeat("x", MaxAliasEmailLength) + "@example.com"
		mustApply(t, b, change(store.EventCreate, "1080", t0, map[string]any{"email": long}))
		mustApply(t, b, change(store.EventCreate, "1081", t0, map[string]any{"email": "keeper@example.com"}))
		m := change(store.EventMerge, "1081", t0.Add(time.Minute), map[string]any{"email": "keeper@example.com"})
		m.MergedIDs = []string{"1080"}
		if res := mustApply(t, b, m); res.Outcome != apply.Merged {
			t.Fatalf("merge = %+v", res)
		}
	})
}
