package drift

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
)

// compare returns the differing mapped fields of a record and its object,
// each with its verdict.
func (s *Scanner) compare(obj mapping.Object, r records.Record, o *hubspot.Object, clocks map[string]time.Time) ([]*Difference, error) {
	local, err := obj.ToHubSpot(r.Fields)
	if err != nil {
		return nil, fmt.Errorf("drift: %s/%s: %w", obj.ObjectType, r.ID, err)
	}
	var out []*Difference
	for _, f := range obj.Fields {
		lv, hv := local[f.HubSpot], o.Properties[f.HubSpot]
		if f.Direction == mapping.FromHubSpot {
			// Not sent to HubSpot, so ToHubSpot left it out.
			if v, ok := r.Fields[f.Local]; ok {
				l, err := obj.ToHubSpot(map[string]any{f.Local: v})
				if err == nil {
					lv = l[f.HubSpot]
				}
			}
		}
		if same(f, lv, hv) {
			continue
		}
		d := &Difference{
			Kind: KindField, ObjectType: obj.ObjectType, RecordID: r.ID, HubSpotID: o.ID,
			Field: f.Local, Property: f.HubSpot, Local: lv, HubSpot: hv,
		}
		tl := clocks[f.Local]
		if !tl.IsZero() {
			d.LocalAt = &tl
		}
		hist := o.History[f.HubSpot]
		if len(hist) > 0 {
			th := hist[0].Timestamp.UTC()
			d.HubSpotAt = &th
			d.HubSpotSource = strings.Trim(hist[0].SourceType+":"+hist[0].SourceID, ":")
		}
		d.Verdict, d.Reason = s.verdict(f, lv, tl, hist)
		out = append(out, d)
	}
	return out, nil
}

// verdict decides which side of a differing field is newer, by the local
// field clock tl and HubSpot's property history (newest first), never by
// guess:
//   - a field that syncs one way only: the side it syncs from;
//   - HubSpot's current value written by hubsync itself: HubSpot still holds
//     hubsync's last write, so the local value changed since: local newer;
//   - the local value is one HubSpot held before its current value: only
//     HubSpot changed since they agreed (HubSpot newer), unless the local
//     field was written after HubSpot's current value (both changed:
//     ambiguous);
//   - hubsync's last write is older than HubSpot's current value and the
//     local value is another: both changed since hubsync's write: ambiguous;
//   - a field the local record never had (no value, no clock) that HubSpot
//     set: HubSpot newer;
//   - no history, a value without a clock, or values that never agreed:
//     ambiguous.
func (s *Scanner) verdict(f mapping.Field, lv string, tl time.Time, hist []hubspot.PropertyVersion) (Verdict, string) {
	switch f.Direction {
	case mapping.ToHubSpotOnly:
		return LocalNewer, "the field syncs to HubSpot only"
	case mapping.FromHubSpot:
		return HubSpotNewer, "the field syncs from HubSpot only"
	}
	if len(hist) == 0 {
		return Ambiguous, "HubSpot sent no history for the property"
	}
	cur := hist[0]
	th := cur.Timestamp
	if cur.WrittenBy(s.cfg.AppID) {
		return LocalNewer, fmt.Sprintf("HubSpot still holds hubsync's own write of %s; the local value changed since", ts(th))
	}
	if tl.IsZero() && lv == "" {
		return HubSpotNewer, fmt.Sprintf("the local record never had the field; HubSpot set it at %s (%s)", ts(th), cur.SourceType)
	}
	if tl.IsZero() {
		return Ambiguous, fmt.Sprintf("the local field has no clock to compare with HubSpot's change at %s (%s)", ts(th), cur.SourceType)
	}
	for _, v := range hist[1:] {
		switch {
		case sameText(f, v.Value, lv):
			if !tl.Before(th) {
				return Ambiguous, fmt.Sprintf("both changed: HubSpot at %s (%s), here at %s back to an older value", ts(th), cur.SourceType, ts(tl))
			}
			return HubSpotNewer, fmt.Sprintf("changed in HubSpot at %s (%s); the local value is HubSpot's of %s", ts(th), cur.SourceType, ts(v.Timestamp))
		case v.WrittenBy(s.cfg.AppID):
			return Ambiguous, fmt.Sprintf("both changed since hubsync wrote HubSpot at %s: here at %s, in HubSpot at %s (%s)", ts(v.Timestamp), ts(tl), ts(th), cur.SourceType)
		}
	}
	return Ambiguous, fmt.Sprintf("the values never agreed: here since %s, in HubSpot since %s (%s)", ts(tl), ts(th), cur.SourceType)
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// same reports whether a local and a HubSpot value are the same value.
func same(f mapping.Field, lv, hv string) bool { return sameText(f, lv, hv) }

func sameText(f mapping.Field, a, b string) bool {
	if a == b {
		return true
	}
	switch f.Type {
	case mapping.Number:
		x, errA := strconv.ParseFloat(a, 64)
		y, errB := strconv.ParseFloat(b, 64)
		return errA == nil && errB == nil && x == y
	case mapping.Bool:
		x, errA := strconv.ParseBool(a)
		y, errB := strconv.ParseBool(b)
		return errA == nil && errB == nil && x == y
	}
	// HubSpot keeps email addresses in lower case.
	return f.HubSpot == "email" && strings.EqualFold(a, b)
}

// decide applies the object's policy: the direction a difference is repaired
// in, "" for none.
func decide(d *Difference, pol Policy) string {
	if pol == PolicyReportOnly {
		return ""
	}
	switch d.Verdict {
	case LocalNewer:
		return ToHubSpot
	case HubSpotNewer:
		return ToLocal
	}
	switch pol {
	case PolicyHubSpotWins:
		return ToLocal
	case PolicyLocalWins:
		return ToHubSpot
	case PolicyNewestWins:
		if d.LocalAt != nil && d.HubSpotAt != nil {
			switch d.LocalAt.Compare(*d.HubSpotAt) {
			case 1:
				return ToHubSpot
			case -1:
				return ToLocal
			}
		}
	}
	return ""
}
