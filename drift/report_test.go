package drift_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// A scan that finds more differences than MaxDifferences lists that many,
// counts the rest (Omitted) in every total, and repairs every one of them:
// whether a difference is listed changes nothing but the list.
func TestDifferencesPastTheLimit(t *testing.T) { dbtest.Each(t, testDifferencesPastTheLimit) }

func testDifferencesPastTheLimit(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{MaxDifferences: 2, PageSize: 2, SkipOrphans: true})
	// Five drifting contacts, in scan order (record ids grow): HubSpot edits
	// (repaired to local) and local edits behind the API (repaired to
	// HubSpot) on both sides of the limit.
	type drifted struct {
		recID, hid, want string
		local            bool
	}
	var all []drifted
	for i, local := range []bool{false, false, true, true, false} {
		rec, hid := b.contact(t, fmt.Sprintf("c%d@example.com", i), "Ada")
		all = append(all, drifted{recID: rec.ID, hid: hid, want: fmt.Sprintf("Name%d", i), local: local})
	}
	for _, c := range all {
		if c.local {
			f, _ := json.Marshal(map[string]any{"email": b.prop(t, c.hid, "email"), "first_name": c.want, "last_name": "Lovelace"})
			b.exec(t, "UPDATE hubsync_record SET Fields = ? WHERE ObjectType = 'contacts' AND Id = ?", string(f), c.recID)
		} else if err := b.sim.UserUpdate("contacts", c.hid, map[string]string{"firstname": c.want}); err != nil {
			t.Fatal(err)
		}
	}
	before := b.queued(t)

	// A run's limit overrides the scanner's; a dry run lists and omits alike.
	rep := b.run(t, drift.Options{DryRun: true, MaxDifferences: 4})
	if len(rep.Differences) != 4 || rep.Omitted != 1 || rep.MaxDifferences != 4 || rep.Found() != 5 || rep.Remaining != 5 {
		t.Fatalf("dry run with a limit of 4: %d listed, %d omitted (limit %d), %d remaining; want 4, 1, 5",
			len(rep.Differences), rep.Omitted, rep.MaxDifferences, rep.Remaining)
	}
	if _, err := b.scanner.Run(context.Background(), drift.Options{MaxDifferences: -1}); err == nil || !strings.Contains(err.Error(), "Options.MaxDifferences") {
		t.Fatalf("a negative Options.MaxDifferences: %v; want an error naming it", err)
	}
	if after := b.queued(t); after != before {
		t.Fatalf("the dry run (or the refused run) enqueued %d events", after-before)
	}

	rep = b.run(t, drift.Options{})
	if len(rep.Differences) != 2 || rep.Omitted != 3 || rep.MaxDifferences != 2 || rep.Found() != 5 {
		t.Fatalf("%d listed, %d omitted (limit %d); want the first 2 listed and 3 omitted: %+v", len(rep.Differences), rep.Omitted, rep.MaxDifferences, rep.Differences)
	}
	for i, df := range rep.Differences {
		if df.RecordID != all[i].recID {
			t.Errorf("listed difference %d is of record %s; want the scan's first, %s", i, df.RecordID, all[i].recID)
		}
	}
	if rep.ByObject["contacts"]["firstname"] != 5 || rep.Repaired[drift.ToLocal] != 3 || rep.Repaired[drift.ToHubSpot] != 2 || rep.Remaining != 0 {
		t.Fatalf("by object %v, repaired %v, remaining %d; want all 5 counted: 3 to local, 2 to HubSpot, none remaining", rep.ByObject, rep.Repaired, rep.Remaining)
	}
	classes := rep.ByClass()
	hs := drift.Class{ObjectType: "contacts", Kind: drift.KindField, Key: "firstname", Verdict: drift.HubSpotNewer}
	lo := drift.Class{ObjectType: "contacts", Kind: drift.KindField, Key: "firstname", Verdict: drift.LocalNewer}
	if classes[hs] != 3 || classes[lo] != 2 || len(classes) != 2 {
		t.Fatalf("ByClass = %v; want 3 hubspot_newer and 2 local_newer firstname", classes)
	}
	// Every repair is queued, the omitted ones' too.
	for _, c := range all {
		var n int
		if c.local {
			n = b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE RecordID = ? AND Status = 'pending'", c.recID)
		} else {
			n = b.count(t, "SELECT COUNT(*) FROM _System_IntegrationInbound WHERE ExternalID = ? AND Status = 'pending'", c.hid)
		}
		if n != 1 {
			t.Errorf("record %s (local edit %v): %d repairs queued; want 1", c.recID, c.local, n)
		}
	}

	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"differences contacts: firstname 5", "2 to HubSpot, 3 to local", "3 more differences are counted above but not listed",
		"the first 2", "-max-differences", "HUBSYNC_DRIFT_MAX_DIFFERENCES", "… and 3 more"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n  - contacts firstname"); n != 2 {
		t.Errorf("the text report lists %d differences; want 2:\n%s", n, out)
	}
	js, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(js), `"differences_omitted":3`) || !strings.Contains(string(js), `"max_differences":2`) {
		t.Errorf("the JSON report does not say what it left out: %s, %v", js, err)
	}

	b.drain(t)
	for _, c := range all {
		if l, h := b.field(t, c.recID, "first_name"), b.prop(t, c.hid, "firstname"); l != c.want || h != c.want {
			t.Errorf("record %s after the repairs: local %v, HubSpot %q; want %s on both sides", c.recID, l, h, c.want)
		}
	}
	clean(t, b)
}

// A negative MaxDifferences, or one past MaxDifferencesMax, is a
// configuration error naming the field and what to use; 0 takes the default.
func TestMaxDifferencesConfig(t *testing.T) {
	for _, n := range []int{-1, drift.MaxDifferencesMax + 1} {
		_, err := drift.New(drift.Config{MaxDifferences: n})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Config.MaxDifferences is %d; use 1..100000", n)) || !strings.Contains(err.Error(), "0 for 10000") {
			t.Fatalf("drift.New with MaxDifferences %d: %v; want an error naming Config.MaxDifferences and the fix", n, err)
		}
	}
	b := setup(t, store.SQLite, drift.Config{})
	if _, err := b.scanner.Run(context.Background(), drift.Options{MaxDifferences: drift.MaxDifferencesMax + 1}); err == nil || !strings.Contains(err.Error(), "Options.MaxDifferences") {
		t.Fatalf("a run with MaxDifferences past the most: %v; want an error naming Options.MaxDifferences", err)
	}
	if rep := b.run(t, drift.Options{DryRun: true}); rep.MaxDifferences != drift.MaxDifferencesDefault {
		t.Fatalf("MaxDifferences 0 gave a limit of %d; want %d", rep.MaxDifferences, drift.MaxDifferencesDefault)
	}
}

// A listed difference shows at most ListedValueMax bytes of each value, cut
// at a character boundary: the list's size follows MaxDifferences whatever
// the properties hold.
func TestListedValuesAreCut(t *testing.T) {
	b := setup(t, store.SQLite, drift.Config{})
	long := strings.Repeat("é", drift.ListedValueMax) // 2 bytes each
	_, hid := b.contact(t, "ada@example.com", "Ada")
	if err := b.sim.UserUpdate("contacts", hid, map[string]string{"firstname": long}); err != nil {
		t.Fatal(err)
	}
	rep := b.run(t, drift.Options{DryRun: true})
	if len(rep.Differences) != 1 {
		t.Fatalf("differences %+v; want the first name's", rep.Differences)
	}
	got := rep.Differences[0].HubSpot
	if want := strings.Repeat("é", drift.ListedValueMax/2) + "…"; got != want {
		t.Fatalf("listed HubSpot value of %d bytes: %d bytes %q…; want the first %d bytes and …", len(long), len(got), got[:min(len(got), 20)], drift.ListedValueMax)
	}
}
