package drift_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// TestMergedEmailsHeld: contacts merged in HubSpot into a linked contact
// without hubsync keeping their emails (merges applied before migration
// 031, or whose webhook never came) leave the emails on the survivor
// (hs_additional_emails). A scan makes the survivor's record hold them, so a
// new local contact with one is refused (409) instead of being upserted over
// the survivor's HubSpot contact. One that a live local record still has is
// reported, not held. A dry run holds nothing; a second scan finds nothing.
func TestMergedEmailsHeld(t *testing.T) { dbtest.Each(t, testMergedEmailsHeld) }

func testMergedEmailsHeld(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	ctx := context.Background()
	frank, fid := b.contact(t, "frank@example.com", "Frank")
	gus, gid := b.contact(t, "gus@example.com", "Gus")
	mergeInHubSpot(t, b, fid, "Eve@Example.com")
	if err := b.sim.UserMerge("contacts", fid, gid); err != nil {
		t.Fatal(err)
	}

	rep := b.run(t, drift.Options{DryRun: true})
	held, taken := mergedEmails(rep)
	if held["eve@example.com"] != frank.ID || taken["gus@example.com"] != frank.ID {
		t.Fatalf("dry run: differences %+v; want eve@example.com to be held by %s, gus@example.com reported", rep.Differences, frank.ID)
	}
	for _, df := range rep.Differences {
		if df.Kind == drift.KindMergedEmail && df.Repaired {
			t.Fatalf("a dry run repaired %+v", df)
		}
	}
	if n := b.count(t, "SELECT COUNT(*) FROM hubsync_email_alias"); n != 0 {
		t.Fatalf("a dry run held %d emails", n)
	}

	rep = b.run(t, drift.Options{})
	held, taken = mergedEmails(rep)
	if held["eve@example.com"] != frank.ID || taken["gus@example.com"] != frank.ID || len(held) != 1 {
		t.Fatalf("differences %+v; want eve@example.com held by %s and gus@example.com reported", rep.Differences, frank.ID)
	}
	for _, df := range rep.Differences {
		if df.Kind == drift.KindMergedEmail && df.HubSpot == "eve@example.com" && (!df.Repaired || df.Repair != drift.ToLocal) {
			t.Fatalf("eve@example.com: %+v; want repaired to_local", df)
		}
		if df.Kind == drift.KindMergedEmail && df.HubSpot == "gus@example.com" && (df.Repaired || df.Verdict != drift.Ambiguous || !strings.Contains(df.Reason, gus.ID)) {
			t.Fatalf("gus@example.com: %+v; want reported as ambiguous, naming record %s", df, gus.ID)
		}
	}
	_, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "eve@example.com", "first_name": "Mallory"})
	if !errors.Is(err, records.ErrEmailTaken) || !strings.Contains(err.Error(), frank.ID) {
		t.Fatalf("a new contact with the merged-away email: %v; want ErrEmailTaken naming %s", err, frank.ID)
	}
	if got := b.prop(t, fid, "firstname"); got != "Frank" {
		t.Fatalf("the survivor's firstname = %q; want Frank", got)
	}

	rep = b.run(t, drift.Options{})
	if held, _ := mergedEmails(rep); len(held) != 0 {
		t.Fatalf("a second scan held %v again", held)
	}
}

// mergedEmails returns the emails a report held (or would hold), and those
// it reported as another record's, each with the record it is about.
func mergedEmails(rep *drift.Report) (held, taken map[string]string) {
	held, taken = map[string]string{}, map[string]string{}
	for _, df := range rep.Differences {
		if df.Kind != drift.KindMergedEmail {
			continue
		}
		if df.Repair == drift.ToLocal {
			held[df.HubSpot] = df.RecordID
		} else {
			taken[df.HubSpot] = df.RecordID
		}
	}
	return held, taken
}

// TestMissingLinkWithHeldEmailIsNotResent: a local contact HubSpot never
// accepted whose email HubSpot keeps on another contact (merged into it) is
// reported, not resent: its upsert by that email would write over the
// survivor. The scan holds the survivor's emails before it looks at records
// without a link.
func TestMissingLinkWithHeldEmailIsNotResent(t *testing.T) {
	dbtest.Each(t, testMissingLinkWithHeldEmail)
}

func testMissingLinkWithHeldEmail(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	ctx := context.Background()
	frank, fid := b.contact(t, "frank@example.com", "Frank")
	mergeInHubSpot(t, b, fid, "eve@example.com")
	// A local Eve, made before any scan held the email; its write never
	// reached HubSpot (a dead letter).
	local, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "eve@example.com", "first_name": "Mallory"})
	if err != nil {
		t.Fatal(err)
	}
	b.deadLetter(t, local.ID)
	before := b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE RecordID = ?", local.ID)

	rep := b.run(t, drift.Options{})
	var found bool
	for _, df := range rep.Differences {
		if df.Kind == drift.KindMissingLink && df.RecordID == local.ID {
			found = true
			if df.Repair != "" || df.Repaired || !strings.Contains(df.Reason, frank.ID) {
				t.Fatalf("the local Eve: %+v; want reported (naming %s), not resent", df, frank.ID)
			}
		}
	}
	if !found {
		t.Fatalf("differences %+v; want the local Eve's missing link", rep.Differences)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE RecordID = ?", local.ID); n != before {
		t.Fatalf("%d outbound events of the local Eve after the scan, %d before: it was resent", n, before)
	}
	b.drain(t)
	if got := b.prop(t, fid, "firstname"); got != "Frank" {
		t.Fatalf("the survivor's firstname = %q; want Frank", got)
	}
}

// mergeInHubSpot creates a contact with email in HubSpot (no webhook: the
// bundle's simulator sends none) and merges it into contact survivor.
func mergeInHubSpot(t *testing.T, b *bundle, survivor, email string) {
	t.Helper()
	id, err := b.sim.UserCreate("contacts", map[string]string{"email": email, "firstname": "Eve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.sim.UserMerge("contacts", survivor, id); err != nil {
		t.Fatal(err)
	}
}
