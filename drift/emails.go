package drift

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
)

// additionalEmails is hubspot.AdditionalEmailsProperty, which the scan reads
// of contacts.
const additionalEmails = hubspot.AdditionalEmailsProperty

// holdEmails makes record r, linked to contact o, hold the emails HubSpot
// keeps on o besides its own (records.Service.HoldEmails), so that a new
// record with one of them is refused rather than upserted onto o. The
// SyncWorker does this for every merge it applies; the scan finds the
// merges it applied before it did (migration 031), and those whose webhook
// never came. Each email newly held is one difference repaired to the
// local side; one another live record has is reported.
func (s *Scanner) holdEmails(ctx context.Context, obj mapping.Object, dry bool, r records.Record, o *hubspot.Object, rep *Report) error {
	emails := o.AdditionalEmails()
	if len(emails) == 0 {
		return nil
	}
	res, err := s.cfg.Records.HoldEmails(ctx, obj.ObjectType, r.ID, emails, dry)
	if errors.Is(err, records.ErrNotFound) {
		return nil // deleted since the page was read
	}
	if err != nil {
		return fmt.Errorf("drift: hold the additional emails of %s/%s: %w", obj.ObjectType, r.ID, err)
	}
	for _, e := range res.Held {
		rep.add(Difference{
			Kind: KindMergedEmail, ObjectType: obj.ObjectType, RecordID: r.ID, HubSpotID: o.ID, HubSpot: e,
			Verdict: HubSpotNewer, Repair: ToLocal, Repaired: !dry,
			Reason: fmt.Sprintf("HubSpot keeps %s on this contact (merged into it, or added there), so a new record with it would be written over this one; the record holds it, and such a write gets 409", e),
		})
	}
	for _, e := range slices.Sorted(maps.Keys(res.Taken)) {
		if rep.keptElsewhere == nil {
			rep.keptElsewhere = map[string]string{}
		}
		rep.keptElsewhere[res.Taken[e]] = r.ID
		rep.add(Difference{
			Kind: KindMergedEmail, ObjectType: obj.ObjectType, RecordID: r.ID, HubSpotID: o.ID, HubSpot: e,
			Verdict: Ambiguous,
			Reason:  fmt.Sprintf("HubSpot keeps %s on this contact (merged into it, or added there), but local record %s has it as its email: that record's contact was merged into this one in HubSpot, or the record was given an email HubSpot keeps on this one; delete it or give it another email, then run drift again", e, res.Taken[e]),
		})
	}
	return nil
}
