package drift

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
)

// additionalEmails is the HubSpot contact property that lists, separated by
// ";", the emails a contact has besides its own: those of the contacts
// merged into it, and addresses added by hand. HubSpot finds the contact by
// any of them, so an upsert by one writes over it.
const additionalEmails = "hs_additional_emails"

// holdEmails makes record r, linked to contact o, hold the emails HubSpot
// keeps on o besides its own (records.Service.HoldEmails), so that a new
// record with one of them is refused rather than upserted onto o. The
// SyncWorker does this for every merge it applies; the scan finds the
// merges it applied before it did (migration 031), and those whose webhook
// never came. Each email newly held is one difference repaired to the
// local side; one another live record has is reported.
func (s *Scanner) holdEmails(ctx context.Context, obj mapping.Object, dry bool, r records.Record, o *hubspot.Object, rep *Report) error {
	list := o.Properties[additionalEmails]
	if strings.TrimSpace(list) == "" {
		return nil
	}
	res, err := s.cfg.Records.HoldEmails(ctx, obj.ObjectType, r.ID, strings.Split(list, ";"), dry)
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
