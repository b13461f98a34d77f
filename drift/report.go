package drift

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind names what kind of drift a Difference is.
type Kind string

// Kinds of drift.
const (
	// KindField: a mapped field differs between a linked record and its object.
	KindField Kind = "field"
	// KindMissingLink: a local record has no HubSpot link although nothing
	// is on its way to HubSpot for it.
	KindMissingLink Kind = "missing_link"
	// KindGone: a linked record's HubSpot object is gone (deleted or merged).
	KindGone Kind = "gone_in_hubspot"
	// KindOrphan: a HubSpot object no local record is linked to, whose
	// hubsync_record_id (or mapped id property) points at no local record.
	KindOrphan Kind = "orphan"
	// KindMergedEmail: an email HubSpot keeps on a linked contact besides
	// its own (hs_additional_emails) that the local record did not hold.
	KindMergedEmail Kind = "merged_email"
)

// Verdict says which side holds the value to keep.
type Verdict string

// Verdicts.
const (
	// LocalNewer: the local value is newer; HubSpot is repaired.
	LocalNewer Verdict = "local_newer"
	// HubSpotNewer: HubSpot's value is newer; the local record is repaired.
	HubSpotNewer Verdict = "hubspot_newer"
	// Ambiguous: both sides changed since they last agreed (or no timestamp
	// decides); reported, repaired only when the object's policy says which
	// side wins.
	Ambiguous Verdict = "ambiguous"
)

// Repair directions (Difference.Repair and Report.Repaired keys).
const (
	// ToHubSpot: repaired by an outbound event (the outbound worker writes HubSpot).
	ToHubSpot = "to_hubspot"
	// ToLocal: repaired by an inbound change (the SyncWorker applies it).
	ToLocal = "to_local"
)

// Difference is one drift found.
type Difference struct {
	Kind       Kind   `json:"kind"`
	ObjectType string `json:"object_type"`
	RecordID   string `json:"record_id,omitempty"`
	HubSpotID  string `json:"hubspot_id,omitempty"`
	// Field and Property name the local field and HubSpot property (KindField).
	Field    string `json:"field,omitempty"`
	Property string `json:"property,omitempty"`
	// Local and HubSpot are the two values as HubSpot property text.
	Local   string `json:"local,omitempty"`
	HubSpot string `json:"hubspot,omitempty"`
	// LocalAt is the local field clock; HubSpotAt the timestamp of
	// HubSpot's current value, HubSpotSource who wrote it.
	LocalAt       *time.Time `json:"local_at,omitempty"`
	HubSpotAt     *time.Time `json:"hubspot_at,omitempty"`
	HubSpotSource string     `json:"hubspot_source,omitempty"`
	Verdict       Verdict    `json:"verdict"`
	// Reason says why, in words.
	Reason string `json:"reason"`
	// Repair is ToHubSpot, ToLocal or "" (reported only).
	Repair string `json:"repair,omitempty"`
	// Repaired is true when the repair was enqueued (never in a dry run).
	Repaired bool `json:"repaired"`
}

// Key names the difference in the report's counts: the HubSpot property of a
// field, else the kind in brackets.
func (d Difference) Key() string {
	if d.Kind == KindField {
		return d.Property
	}
	return "[" + string(d.Kind) + "]"
}

// String renders the difference on one line.
func (d Difference) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s local=%s hubspot=%s", d.ObjectType, d.Key(), cmp.Or(d.RecordID, "-"), cmp.Or(d.HubSpotID, "-"))
	switch d.Kind {
	case KindField:
		fmt.Fprintf(&b, " (%q here, %q in HubSpot)", d.Local, d.HubSpot)
	case KindMergedEmail:
		fmt.Fprintf(&b, " (%q)", d.HubSpot)
	}
	fmt.Fprintf(&b, ": %s, %s", d.Verdict, d.Reason)
	switch {
	case d.Repaired:
		fmt.Fprintf(&b, "; repaired %s", d.Repair)
	case d.Repair != "":
		fmt.Fprintf(&b, "; would repair %s", d.Repair)
	default:
		b.WriteString("; reported")
	}
	return b.String()
}

// Report is what a scan found and did.
type Report struct {
	// DryRun is true when nothing was repaired on purpose.
	DryRun bool `json:"dry_run"`
	// Complete is true when every phase of every object type reached its
	// end; false when the scan stopped early (it resumes from its cursor).
	Complete bool `json:"complete"`
	// ResumedAfter names, per "<object type> <phase>" (phase "records" or
	// "hubspot"), the cursor this run resumed an interrupted scan after:
	// what lies before it was compared by the interrupted run and is not in
	// this report. Empty when the run started from the beginning.
	ResumedAfter map[string]string `json:"resumed_after,omitempty"`
	// Scanned counts local records compared, HubSpotScanned HubSpot objects
	// checked for orphans, by object type.
	Scanned        map[string]int `json:"scanned"`
	HubSpotScanned map[string]int `json:"hubspot_scanned"`
	// Skipped counts records left alone because a change of theirs is in
	// flight (queued outbound or inbound): not drift, the queues carry it.
	Skipped map[string]int `json:"skipped_in_flight"`
	// Differences lists the differences found, in scan order, up to
	// MaxDifferences of them: a drift that touches every record (a mapping
	// change, a restore) must not hold the whole database in memory, nor in
	// the admin route's answer.
	Differences []Difference `json:"differences"`
	// MaxDifferences is the most Differences lists (Config.MaxDifferences,
	// or Options.MaxDifferences for the run).
	MaxDifferences int `json:"max_differences"`
	// Omitted counts the differences found past MaxDifferences: not listed,
	// but counted like the listed ones in every count below (and in
	// ByClass), and repaired alike.
	Omitted int `json:"differences_omitted"`
	// ByObject counts differences by object type and Difference.Key.
	ByObject map[string]map[string]int `json:"by_object"`
	// Repaired counts repairs enqueued by direction (ToHubSpot, ToLocal).
	Repaired map[string]int `json:"repaired"`
	// Ambiguous, Orphans and MissingLinks count those differences.
	Ambiguous    int `json:"ambiguous"`
	Orphans      int `json:"orphans"`
	MissingLinks int `json:"missing_links"`
	// Remaining counts differences not repaired.
	Remaining int `json:"remaining"`
	// HubSpotCalls counts the calls made (each reserved from the budget).
	HubSpotCalls int `json:"hubspot_calls"`

	// byClass counts every difference, listed or omitted, by Class.
	byClass map[Class]int
	// keptElsewhere maps the records whose email HubSpot keeps on another
	// linked contact, found by this scan, to that contact's record: not to
	// be resent (see repairMissingLink).
	keptElsewhere map[string]string
}

func newReport(dry bool, maxDifferences int) *Report {
	return &Report{
		DryRun: dry, Scanned: map[string]int{}, HubSpotScanned: map[string]int{}, Skipped: map[string]int{},
		Differences: []Difference{}, MaxDifferences: maxDifferences,
		ByObject: map[string]map[string]int{}, Repaired: map[string]int{}, byClass: map[Class]int{},
	}
}

// Found returns how many differences the scan found: those listed in
// Differences and those omitted past MaxDifferences.
func (r *Report) Found() int { return len(r.Differences) + r.Omitted }

// Class is what ByClass counts differences by.
type Class struct {
	ObjectType string
	Kind       Kind
	// Key is Difference.Key: the HubSpot property of a field, else the kind
	// in brackets.
	Key     string
	Verdict Verdict
}

// ByClass counts every difference the scan found, listed or omitted, by
// object type, kind, key and verdict (what the server's metrics count by).
// It is not in the JSON, whose ByObject, Ambiguous, Orphans and MissingLinks
// hold the totals: a report decoded from JSON returns none.
func (r *Report) ByClass() map[Class]int { return maps.Clone(r.byClass) }

// resumed notes that a phase of objectType resumed after cursor.
func (r *Report) resumed(objectType, phase, cursor string) {
	if r.ResumedAfter == nil {
		r.ResumedAfter = map[string]string{}
	}
	r.ResumedAfter[objectType+" "+phase] = cursor
}

// add counts d and lists it while the list has room. Whether d is listed
// changes nothing else: it was repaired (or not) before it came here.
func (r *Report) add(d Difference) {
	if len(r.Differences) < r.MaxDifferences {
		d.Local, d.HubSpot = listedValue(d.Local), listedValue(d.HubSpot)
		r.Differences = append(r.Differences, d)
	} else {
		r.Omitted++
	}
	r.byClass[Class{ObjectType: d.ObjectType, Kind: d.Kind, Key: d.Key(), Verdict: d.Verdict}]++
	if r.ByObject[d.ObjectType] == nil {
		r.ByObject[d.ObjectType] = map[string]int{}
	}
	r.ByObject[d.ObjectType][d.Key()]++
	switch {
	case d.Kind == KindOrphan:
		r.Orphans++
	case d.Kind == KindMissingLink:
		r.MissingLinks++
	}
	if d.Verdict == Ambiguous {
		r.Ambiguous++
	}
	if d.Repaired {
		r.Repaired[d.Repair]++
	} else {
		r.Remaining++
	}
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := ""
	if r.DryRun {
		mode = " (dry run: nothing repaired)"
	}
	fmt.Fprintf(&b, "drift report%s\n", mode)
	for _, t := range slices.Sorted(maps.Keys(r.Scanned)) {
		fmt.Fprintf(&b, "  %-12s %d records scanned, %d HubSpot objects walked for orphans, %d in flight skipped\n", t, r.Scanned[t], r.HubSpotScanned[t], r.Skipped[t])
	}
	for _, t := range slices.Sorted(maps.Keys(r.ByObject)) {
		by := r.ByObject[t]
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
		}
		fmt.Fprintf(&b, "  differences %s: %s\n", t, strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "  repaired: %d to HubSpot, %d to local; ambiguous %d, orphans %d, missing links %d; %d remain\n",
		r.Repaired[ToHubSpot], r.Repaired[ToLocal], r.Ambiguous, r.Orphans, r.MissingLinks, r.Remaining)
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "  %d more differences are counted above but not listed below: the report lists the first %d; "+
			"to list more, raise the limit (-max-differences, HUBSYNC_DRIFT_MAX_DIFFERENCES, or max_differences in POST /admin/drift) or scan fewer object types (-object)\n",
			r.Omitted, r.MaxDifferences)
	}
	if !r.Complete {
		if r.DryRun {
			b.WriteString("  the scan stopped early (a dry run keeps no cursor: the next one starts from the beginning)\n")
		} else {
			b.WriteString("  the scan stopped early; the next run resumes where it stopped\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.ResumedAfter)) {
		fmt.Fprintf(&b, "  resumed an interrupted scan: %s after %q; what came before was compared by the interrupted run and is not in this report\n", k, r.ResumedAfter[k])
	}
	for _, d := range r.Differences {
		fmt.Fprintf(&b, "  - %s\n", d)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "  - … and %d more, not listed (see the limit above)\n", r.Omitted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// listedValue is v as a listed difference shows it: cut after
// ListedValueMax bytes (at a character boundary), ending in "…", so that the
// list's size follows MaxDifferences whatever the properties hold.
func listedValue(v string) string {
	if len(v) <= ListedValueMax {
		return v
	}
	cut := ListedValueMax
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut-- // not inside a character
	}
	return v[:cut] + "…"
}
