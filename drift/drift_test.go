package drift_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// only returns the single difference of a report, failing otherwise.
func only(t *testing.T, rep *drift.Report) drift.Difference {
	t.Helper()
	if len(rep.Differences) != 1 {
		t.Fatalf("want exactly one difference, got %d: %+v", len(rep.Differences), rep.Differences)
	}
	return rep.Differences[0]
}

func clean(t *testing.T, b *bundle) {
	t.Helper()
	rep := b.run(t, drift.Options{DryRun: true})
	if len(rep.Differences) != 0 || rep.Remaining != 0 {
		t.Fatalf("after the repair a scan still finds %+v", rep.Differences)
	}
}

// A HubSpot edit whose webhook never came is found, judged HubSpot-newer by
// its history timestamp, and repaired through the inbound queue only.
func TestHubSpotEditWithoutWebhook(t *testing.T) { dbtest.Each(t, testHubSpotEditWithoutWebhook) }

func testHubSpotEditWithoutWebhook(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	rec, hid := b.contact(t, "ada@example.com", "Ada")
	// firstname changes; phone, which the record never had, is set.
	if err := b.sim.UserUpdate("contacts", hid, map[string]string{"firstname": "Grace", "phone": "+1 555 0100"}); err != nil {
		t.Fatal(err)
	}
	rep := b.run(t, drift.Options{})
	if len(rep.Differences) != 2 {
		t.Fatalf("differences = %+v; want firstname and phone", rep.Differences)
	}
	df := rep.Differences[0]
	if df.Property == "phone" {
		df = rep.Differences[1]
	}
	if df.Kind != drift.KindField || df.Property != "firstname" || df.Local != "Ada" || df.HubSpot != "Grace" ||
		df.Verdict != drift.HubSpotNewer || df.Repair != drift.ToLocal || !df.Repaired {
		t.Fatalf("difference = %+v; want firstname Ada/Grace, hubspot_newer, repaired to_local", df)
	}
	for _, df := range rep.Differences {
		if df.Property == "phone" && (df.Verdict != drift.HubSpotNewer || !df.Repaired || df.Local != "") {
			t.Fatalf("phone = %+v; want hubspot_newer (the record never had it), repaired", df)
		}
	}
	if rep.Repaired[drift.ToLocal] != 2 || rep.Remaining != 0 || rep.Scanned["contacts"] != 1 || rep.ByObject["contacts"]["firstname"] != 1 {
		t.Fatalf("report = %+v", rep)
	}
	// Nothing is written outside the queues: the record changes only when
	// the SyncWorker applies the queued change.
	if got := b.field(t, rec.ID, "first_name"); got != "Ada" {
		t.Fatalf("the scan wrote the record itself: first_name = %v", got)
	}
	b.drain(t)
	if got, phone := b.field(t, rec.ID, "first_name"), b.field(t, rec.ID, "phone"); got != "Grace" || phone != "+1 555 0100" {
		t.Fatalf("after the SyncWorker first_name = %v, phone = %v; want Grace, +1 555 0100", got, phone)
	}
	// Applied inbound with the sync-source marker: nothing goes back out.
	if n := b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status <> 'processed'"); n != 0 {
		t.Fatalf("%d outbound events left after the inbound repair", n)
	}
	clean(t, b)
}

// A local row changed behind the API's back (no event) is found, judged
// local-newer (HubSpot still holds hubsync's own write) and repaired by an
// outbound event.
func TestLocalChangeBehindTheAPI(t *testing.T) { dbtest.Each(t, testLocalChangeBehindTheAPI) }

func testLocalChangeBehindTheAPI(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	rec, hid := b.contact(t, "ada@example.com", "Ada")
	f, _ := json.Marshal(map[string]any{"email": "ada@example.com", "first_name": "Augusta", "last_name": "Lovelace"})
	b.exec(t, "UPDATE hubsync_record SET Fields = ? WHERE ObjectType = 'contacts' AND Id = ?", string(f), rec.ID)

	rep := b.run(t, drift.Options{})
	df := only(t, rep)
	if df.Property != "firstname" || df.Verdict != drift.LocalNewer || df.Repair != drift.ToHubSpot || !df.Repaired {
		t.Fatalf("difference = %+v; want firstname local_newer repaired to_hubspot", df)
	}
	if got := b.prop(t, hid, "firstname"); got != "Ada" {
		t.Fatalf("the scan wrote HubSpot itself: firstname = %q", got)
	}
	b.drain(t)
	if got := b.prop(t, hid, "firstname"); got != "Augusta" {
		t.Fatalf("after the outbound worker HubSpot has firstname %q; want Augusta", got)
	}
	clean(t, b)
}

// ambiguous makes a field that changed on both sides since they last
// agreed: a local edit whose event was dead-lettered, then a HubSpot edit
// (or the other way round when hubspotFirst).
func ambiguous(t *testing.T, b *bundle, hubspotFirst bool) (recID, hid string) {
	t.Helper()
	rec, hid := b.contact(t, "ada@example.com", "Ada")
	edit := func() {
		if err := b.sim.UserUpdate("contacts", hid, map[string]string{"firstname": "Grace"}); err != nil {
			t.Fatal(err)
		}
	}
	if hubspotFirst {
		edit()
	}
	nextMilli() // distinct clocks
	if _, err := b.recs.Update(context.Background(), "contacts", rec.ID, rec.Version, map[string]any{"first_name": "Augusta"}); err != nil {
		t.Fatal(err)
	}
	b.deadLetter(t, rec.ID)
	if !hubspotFirst {
		nextMilli()
		edit()
	}
	return rec.ID, hid
}

// nextMilli returns once the wall clock has moved past the current
// millisecond, so that the next edit's timestamp is later than the last.
func nextMilli() {
	for ms := time.Now().UnixMilli(); time.Now().UnixMilli() <= ms; {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestAmbiguousIsReportedNotOverwritten(t *testing.T) {
	dbtest.Each(t, testAmbiguousIsReportedNotOverwritten)
}

func testAmbiguousIsReportedNotOverwritten(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	recID, hid := ambiguous(t, b, false)
	before := b.queued(t)
	rep := b.run(t, drift.Options{})
	df := only(t, rep)
	if df.Verdict != drift.Ambiguous || df.Repair != "" || df.Repaired || rep.Ambiguous != 1 || rep.Remaining != 1 {
		t.Fatalf("difference = %+v, report %+v; want ambiguous, reported only", df, rep)
	}
	if df.LocalAt == nil || df.HubSpotAt == nil {
		t.Fatalf("an ambiguous difference must show both timestamps: %+v", df)
	}
	if after := b.queued(t); after != before {
		t.Fatalf("an ambiguous difference enqueued %d events", after-before)
	}
	b.drain(t)
	if l, h := b.field(t, recID, "first_name"), b.prop(t, hid, "firstname"); l != "Augusta" || h != "Grace" {
		t.Fatalf("a side was overwritten: local %v, HubSpot %q", l, h)
	}
}

// Each policy decides an ambiguous difference its way; report_only leaves
// even a clear one alone.
func TestPolicies(t *testing.T) { dbtest.Each(t, testPolicies) }

func testPolicies(t *testing.T, d store.Dialect) {
	cases := []struct {
		policy       drift.Policy
		hubspotFirst bool
		local, hs    string // values after the repair
		repair       string
	}{
		{drift.PolicyHubSpotWins, false, "Grace", "Grace", drift.ToLocal},
		{drift.PolicyLocalWins, false, "Augusta", "Augusta", drift.ToHubSpot},
		{drift.PolicyNewestWins, false, "Grace", "Grace", drift.ToLocal},      // HubSpot edited last
		{drift.PolicyNewestWins, true, "Augusta", "Augusta", drift.ToHubSpot}, // local edited last
		{drift.PolicyReport, false, "Augusta", "Grace", ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_hubspotFirst=%v", c.policy, c.hubspotFirst), func(t *testing.T) {
			b := setup(t, d, drift.Config{})
			recID, hid := ambiguous(t, b, c.hubspotFirst)
			rep := b.run(t, drift.Options{Policies: map[string]drift.Policy{"contacts": c.policy}})
			df := only(t, rep)
			if df.Verdict != drift.Ambiguous || df.Repair != c.repair || df.Repaired != (c.repair != "") {
				t.Fatalf("difference = %+v; want ambiguous repaired %q", df, c.repair)
			}
			b.drain(t)
			if l, h := b.field(t, recID, "first_name"), b.prop(t, hid, "firstname"); l != c.local || h != c.hs {
				t.Fatalf("after the repair local %v, HubSpot %q; want %q, %q", l, h, c.local, c.hs)
			}
		})
	}
	// A policy overrides the local value the scan compared, not one the user
	// wrote while the scan waited for HubSpot's answer: that edit is newer
	// than anything compared, so it stays and reaches HubSpot.
	t.Run("edit during the scan", func(t *testing.T) {
		ctx := context.Background()
		b := setup(t, d, drift.Config{})
		recID, hid := ambiguous(t, b, false)
		b.reader.before = func(int64) {
			b.reader.before = nil
			nextMilli()
			r, err := b.recs.Get(ctx, "contacts", recID)
			if err == nil {
				_, err = b.recs.Update(ctx, "contacts", recID, r.Version, map[string]any{"first_name": "Zoe"})
			}
			if err != nil {
				t.Error(err)
			}
			nextMilli()
		}
		policies := drift.Options{Policies: map[string]drift.Policy{"contacts": drift.PolicyHubSpotWins}}
		b.run(t, policies)
		b.drain(t)
		b.run(t, policies)
		b.drain(t)
		if l, h := b.field(t, recID, "first_name"), b.prop(t, hid, "firstname"); l != "Zoe" || h != "Zoe" {
			t.Fatalf("local %v, HubSpot %q; want the edit made during the scan (Zoe) on both sides", l, h)
		}
	})
	t.Run("report_only", func(t *testing.T) {
		b := setup(t, d, drift.Config{Policy: drift.PolicyReportOnly})
		rec, hid := b.contact(t, "ada@example.com", "Ada")
		if err := b.sim.UserUpdate("contacts", hid, map[string]string{"firstname": "Grace"}); err != nil {
			t.Fatal(err)
		}
		rep := b.run(t, drift.Options{})
		if df := only(t, rep); df.Verdict != drift.HubSpotNewer || df.Repair != "" || df.Repaired {
			t.Fatalf("report_only repaired: %+v", df)
		}
		b.drain(t)
		if got := b.field(t, rec.ID, "first_name"); got != "Ada" {
			t.Fatalf("report_only changed the record: %v", got)
		}
	})
}

// A record whose creation never reached HubSpot (its event dead-lettered)
// has no link: found and resent.
func TestMissingLink(t *testing.T) { dbtest.Each(t, testMissingLink) }

func testMissingLink(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	rec, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": "lost@example.com", "first_name": "Lost"})
	if err != nil {
		t.Fatal(err)
	}
	b.deadLetter(t, rec.ID)
	rep := b.run(t, drift.Options{})
	df := only(t, rep)
	if df.Kind != drift.KindMissingLink || df.RecordID != rec.ID || df.Verdict != drift.LocalNewer || !df.Repaired || rep.MissingLinks != 1 {
		t.Fatalf("difference = %+v; want a missing link repaired to HubSpot", df)
	}
	b.drain(t)
	hid, ok, err := links.New(b.st).Lookup(context.Background(), "hubspot", "contacts", rec.ID)
	if err != nil || !ok {
		t.Fatalf("not linked after the repair: %v", err)
	}
	if got := b.prop(t, hid, "firstname"); got != "Lost" {
		t.Fatalf("HubSpot firstname = %q", got)
	}
	clean(t, b)
}

// A HubSpot object no record is linked to: a contact made in HubSpot whose
// creation webhook never came is created locally through the SyncWorker; a
// company whose hubsync_record_id names no local record is reported.
func TestOrphans(t *testing.T) { dbtest.Each(t, testOrphans) }

func testOrphans(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	hid, err := b.sim.UserCreate("contacts", map[string]string{"email": "made-in-hubspot@example.com", "firstname": "Hub"})
	if err != nil {
		t.Fatal(err)
	}
	cid, err := b.sim.UserCreate("companies", map[string]string{"name": "Gone Ltd", "hubsync_record_id": "0190a0a0-0000-7000-8000-000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	rep := b.run(t, drift.Options{})
	if rep.Orphans != 2 || len(rep.Differences) != 2 {
		t.Fatalf("report = %+v; want the two orphans", rep.Differences)
	}
	for _, df := range rep.Differences {
		switch df.HubSpotID {
		case hid:
			if df.Verdict != drift.HubSpotNewer || !df.Repaired || df.Repair != drift.ToLocal {
				t.Errorf("contact orphan = %+v; want hubspot_newer repaired to_local", df)
			}
		case cid:
			if df.Verdict != drift.Ambiguous || df.Repaired || df.ObjectType != "companies" {
				t.Errorf("company orphan = %+v; want ambiguous, reported", df)
			}
		default:
			t.Errorf("unexpected difference %+v", df)
		}
	}
	b.drain(t)
	rid, ok, err := links.New(b.st).LookupRecord(context.Background(), "hubspot", "contacts", hid)
	if err != nil || !ok {
		t.Fatalf("the HubSpot contact has no local record after the repair: %v", err)
	}
	if got := b.field(t, rid, "first_name"); got != "Hub" {
		t.Fatalf("local first_name = %v", got)
	}
	rep = b.run(t, drift.Options{DryRun: true})
	if len(rep.Differences) != 1 || rep.Differences[0].HubSpotID != cid {
		t.Fatalf("after the repair: %+v; want only the company orphan", rep.Differences)
	}
}

// A scan killed mid-way resumes from its cursor: the second run compares
// exactly the records the first did not finish.
func TestResumeAfterKill(t *testing.T) { dbtest.Each(t, testResumeAfterKill) }

func testResumeAfterKill(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{PageSize: 2, SkipOrphans: true})
	var ids []string
	for i := range 7 {
		rec, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": fmt.Sprintf("c%d@example.com", i), "first_name": "C"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	b.drain(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.reader.before = func(n int64) {
		if n == 2 { // the kill lands while the second page is read
			cancel()
		}
	}
	rep, err := b.scanner.Run(ctx, drift.Options{ObjectTypes: []string{"contacts"}})
	if !errors.Is(err, context.Canceled) || rep.Complete {
		t.Fatalf("killed run: complete=%v err=%v", rep.Complete, err)
	}
	cur, err := b.scanner.Cursor(context.Background(), "contacts")
	if err != nil || cur != ids[1] {
		t.Fatalf("cursor after the kill = %q, %v; want the first page's last id %s", cur, err, ids[1])
	}
	b.reader.before = nil
	rep = b.run(t, drift.Options{ObjectTypes: []string{"contacts"}})
	if !rep.Complete || rep.Scanned["contacts"] != 5 {
		t.Fatalf("resumed run scanned %d records (complete=%v); want the 5 after the cursor", rep.Scanned["contacts"], rep.Complete)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || rep.ResumedAfter["contacts records"] != ids[1] || !strings.Contains(text.String(), "resumed an interrupted scan: contacts records after") ||
		!strings.Contains(text.String(), "5 records scanned, 0 HubSpot objects walked for orphans") {
		t.Fatalf("resumed run's report: resumed_after %v\n%s; want it to say it resumed after %s", rep.ResumedAfter, text.String(), ids[1])
	}
	if cur, _ := b.scanner.Cursor(context.Background(), "contacts"); cur != "" {
		t.Fatalf("a finished scan left its cursor at %q", cur)
	}
	if rep = b.run(t, drift.Options{ObjectTypes: []string{"contacts"}}); rep.Scanned["contacts"] != 7 || len(rep.ResumedAfter) != 0 {
		t.Fatalf("the next scan scanned %d; want all 7 from the start", rep.Scanned["contacts"])
	}
}

// Every HubSpot call of a scan is reserved from the budget, and through a
// budget.Share the scan never takes more than its share of a window.
func TestBudgetShare(t *testing.T) {
	b := setup(t, store.SQLite, drift.Config{PageSize: 1})
	for i := range 4 {
		if _, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": fmt.Sprintf("s%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(t)
	rep := b.run(t, drift.Options{})
	if calls := b.reader.calls.Load(); calls == 0 || b.budget.reserved.Load() != calls || int64(rep.HubSpotCalls) != calls {
		t.Fatalf("%d calls made, %d reserved, %d reported; every call must be reserved", calls, b.budget.reserved.Load(), rep.HubSpotCalls)
	}

	// A share of 2 calls per window: a scan needing more stops at 2 until the
	// window moves on, and the shared budget saw only those 2.
	shared := &countingBudget{Budget: must(budget.NewMemory(budget.Config{Limit: 10}))}
	capB := must(budget.NewMemory(budget.Config{Limit: 2, Window: time.Hour, DailyLimit: -1}))
	reader := &countingReader{Reader: b.hs}
	sc, err := drift.New(drift.Config{Store: b.st, Records: b.recs, HubSpot: reader, PageSize: 1,
		Budget: &budget.Share{Shared: shared, Cap: capB, CapKey: "hubspot:drift"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := sc.Run(ctx, drift.Options{DryRun: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a scan beyond its share returned %v; want it waiting for the window", err)
	}
	if reader.calls.Load() != 2 || shared.reserved.Load() != 2 {
		t.Fatalf("with a share of 2 the scan made %d calls and took %d from the shared budget", reader.calls.Load(), shared.reserved.Load())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A dry run reports what it would repair and changes nothing: no event, no
// cursor.
func TestDryRunChangesNothing(t *testing.T) { dbtest.Each(t, testDryRunChangesNothing) }

func testDryRunChangesNothing(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	rec, hid := b.contact(t, "ada@example.com", "Ada")
	if err := b.sim.UserUpdate("contacts", hid, map[string]string{"lastname": "Byron"}); err != nil {
		t.Fatal(err)
	}
	f, _ := json.Marshal(map[string]any{"email": "ada@example.com", "first_name": "Augusta", "last_name": "Lovelace"})
	b.exec(t, "UPDATE hubsync_record SET Fields = ? WHERE ObjectType = 'contacts' AND Id = ?", string(f), rec.ID)
	if _, err := b.sim.UserCreate("contacts", map[string]string{"email": "orphan@example.com"}); err != nil {
		t.Fatal(err)
	}
	before := b.queued(t)
	rep := b.run(t, drift.Options{DryRun: true})
	if len(rep.Differences) != 3 || rep.Remaining != 3 || len(rep.Repaired) != 0 || !rep.DryRun {
		t.Fatalf("dry run report = %+v", rep)
	}
	for _, df := range rep.Differences {
		if df.Repaired || df.Repair == "" {
			t.Errorf("dry run: %+v; want a repair named and not made", df)
		}
	}
	if after := b.queued(t); after != before {
		t.Fatalf("a dry run enqueued %d events", after-before)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM hubsync_drift_cursor"); n != 0 {
		t.Fatalf("a dry run stored %d cursors", n)
	}
	b.drain(t)
	if got := b.prop(t, hid, "lastname"); got != "Byron" {
		t.Fatalf("HubSpot lastname = %q", got)
	}
	if got := b.field(t, rec.ID, "last_name"); got != "Lovelace" {
		t.Fatalf("local last_name = %v", got)
	}
}

// A linked object deleted in HubSpot without a webhook is reported (no
// timestamp says which side to keep); a record deleted here whose archive
// never reached HubSpot is an orphan reported for people to settle.
func TestGoneAndDeletedHere(t *testing.T) { dbtest.Each(t, testGoneAndDeletedHere) }

func testGoneAndDeletedHere(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	_, gone := b.contact(t, "gone@example.com", "Gone")
	kept, keptHID := b.contact(t, "kept@example.com", "Kept")
	if err := b.sim.UserDelete("contacts", gone); err != nil {
		t.Fatal(err)
	}
	if err := b.recs.Delete(context.Background(), "contacts", kept.ID, kept.Version); err != nil {
		t.Fatal(err)
	}
	b.deadLetter(t, kept.ID) // the archive never reaches HubSpot
	rep := b.run(t, drift.Options{})
	if len(rep.Differences) != 2 || rep.Remaining != 2 || len(rep.Repaired) != 0 {
		t.Fatalf("report = %+v", rep.Differences)
	}
	for _, df := range rep.Differences {
		switch df.Kind {
		case drift.KindGone:
			if df.HubSpotID != gone || df.Verdict != drift.Ambiguous {
				t.Errorf("gone = %+v", df)
			}
		case drift.KindOrphan:
			if df.HubSpotID != keptHID || df.RecordID != kept.ID || df.Verdict != drift.LocalNewer || df.Repair != "" {
				t.Errorf("deleted here = %+v", df)
			}
		default:
			t.Errorf("unexpected %+v", df)
		}
	}
}

// An object's drift_policy in the mapping file decides its ambiguous
// differences; a run's policy wins over it.
func TestMappingFilePolicy(t *testing.T) {
	m, err := mapping.Parse([]byte(`objects:
  contacts:
    webhook_name: contact
    id_property: email
    id_field: email
    drift_policy: hubspot_wins
    fields:
      email: email
      first_name: firstname
      last_name: lastname
`))
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, store.SQLite, drift.Config{Mapping: m})
	ambiguous(t, b, false)
	rep := b.run(t, drift.Options{DryRun: true, Policies: map[string]drift.Policy{"contacts": drift.PolicyReport}})
	if df := only(t, rep); df.Repair != "" {
		t.Fatalf("the run's policy did not win: %+v", df)
	}
	rep = b.run(t, drift.Options{DryRun: true})
	if df := only(t, rep); df.Verdict != drift.Ambiguous || df.Repair != drift.ToLocal {
		t.Fatalf("drift_policy hubspot_wins gave %+v", df)
	}
}

// A record HubSpot refuses for good (an invalid email) is resent once by
// drift; when the resend is dead-lettered too, later runs report it and
// leave it to the operator, instead of adding a dead letter at every run.
func TestRefusedRecordIsResentOnce(t *testing.T) { dbtest.Each(t, testRefusedRecordIsResentOnce) }

func testRefusedRecordIsResentOnce(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	rec, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": "not-an-email", "first_name": "Bad"})
	if err != nil {
		t.Fatal(err)
	}
	b.drain(t)
	dead := func() int {
		return b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE RecordID = ? AND Status = 'failed'", rec.ID)
	}
	if n := dead(); n != 1 {
		t.Fatalf("%d dead letters after HubSpot refused the record; want 1", n)
	}
	if df := only(t, b.run(t, drift.Options{})); df.Kind != drift.KindMissingLink || !df.Repaired {
		t.Fatalf("first run: %+v; want the missing link resent", df)
	}
	b.drain(t)
	for run := 2; run <= 3; run++ {
		rep := b.run(t, drift.Options{})
		df := only(t, rep)
		if df.Kind != drift.KindMissingLink || df.Repaired || df.Repair != "" || rep.Remaining != 1 || !strings.Contains(df.Reason, "dlq") {
			t.Fatalf("run %d: %+v; want the missing link reported, pointing at hubsync dlq", run, df)
		}
		b.drain(t)
		if n := dead(); n != 2 {
			t.Fatalf("run %d: %d dead letters; want 2 (the write and one resend)", run, n)
		}
	}
}
