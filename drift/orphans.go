package drift

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

var plainField = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// scanHubSpot walks HubSpot's objects of one type for orphans.
func (s *Scanner) scanHubSpot(ctx context.Context, obj mapping.Object, pol Policy, dry bool, rep *Report) error {
	after := ""
	if !dry {
		var err error
		if after, err = s.cursor(ctx, phaseHubSpot, obj.ObjectType); err != nil {
			return err
		}
		if after != "" {
			rep.resumed(obj.ObjectType, phaseHubSpot, after)
		}
	}
	var props []string
	if obj.IDProperty != "" {
		props = []string{obj.IDProperty}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.reserve(ctx); err != nil {
			return err
		}
		rep.HubSpotCalls++
		page, err := s.cfg.HubSpot.List(ctx, hubspot.ObjectType(obj.HubSpotType), props, after, hubspot.ListLimitMax)
		if err != nil {
			return fmt.Errorf("drift: list %s in HubSpot: %w", obj.HubSpotType, err)
		}
		ids := make([]string, len(page.Results))
		for i, o := range page.Results {
			ids[i] = o.ID
		}
		busy, err := s.openSet(ctx, "open_inbound", s.cfg.Destination, obj.ObjectType, ids)
		if err != nil {
			return err
		}
		for _, o := range page.Results {
			if busy[o.ID] {
				rep.Skipped[obj.ObjectType]++
				continue
			}
			rep.HubSpotScanned[obj.ObjectType]++
			d, err := s.orphan(ctx, obj, o)
			if err != nil {
				return err
			}
			if d == nil {
				continue
			}
			d.Repair = decide(d, pol)
			if d.Repair == ToHubSpot {
				d.Repair = "" // archiving in HubSpot is left to people
			}
			if d.Repair == ToLocal && !dry {
				if err := s.enqueueCreation(ctx, obj, o, d); err != nil {
					return err
				}
			}
			rep.add(*d)
		}
		if page.After == "" || len(page.Results) == 0 {
			if dry {
				return nil
			}
			return s.clearCursor(ctx, phaseHubSpot, obj.ObjectType)
		}
		after = page.After
		if !dry {
			if err := s.putCursor(ctx, phaseHubSpot, obj.ObjectType, after); err != nil {
				return err
			}
		}
	}
}

// orphan checks one HubSpot object; nil when a live local record is linked
// to it or its id property names a local record (an unlinked record is the
// records phase's missing link).
func (s *Scanner) orphan(ctx context.Context, obj mapping.Object, o hubspot.Object) (*Difference, error) {
	owner, ok, err := s.cfg.Links.LookupRecord(ctx, s.cfg.Destination, obj.ObjectType, o.ID)
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	if ok {
		// A link outlives its record: a record deleted here keeps it until
		// the archive reaches HubSpot.
		var n int
		if err := s.db.QueryRowContext(ctx, s.q.Get("record_exists"), obj.ObjectType, owner).Scan(&n); err != nil {
			return nil, fmt.Errorf("drift: find %s/%s: %w", obj.ObjectType, owner, err)
		}
		if n > 0 {
			return nil, nil
		}
		busy, err := s.openSet(ctx, "open_outbound", s.cfg.Destination, obj.ObjectType, []string{owner})
		if err != nil || busy[owner] {
			return nil, err // its delete is on its way
		}
		return &Difference{
			Kind: KindOrphan, ObjectType: obj.ObjectType, RecordID: owner, HubSpotID: o.ID, Verdict: LocalNewer,
			Reason: "deleted here, and the archive never reached HubSpot; archive the object in HubSpot or restore the record",
		}, nil
	}
	idv := ""
	if obj.IDProperty != "" {
		idv = strings.TrimSpace(o.Properties[obj.IDProperty])
	}
	if idv != "" {
		found, err := s.recordFor(ctx, obj, idv)
		if err != nil || found {
			return nil, err
		}
	}
	d := &Difference{Kind: KindOrphan, ObjectType: obj.ObjectType, HubSpotID: o.ID}
	if t, ok, err := s.cfg.Links.Tombstone(ctx, s.cfg.Destination, obj.ObjectType, o.ID); err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	} else if ok {
		d.Verdict = Ambiguous
		d.Reason = fmt.Sprintf("the object has a %s tombstone here; archive it in HubSpot or restore the record", t.Kind)
		return d, nil
	}
	switch {
	case idv != "" && obj.IDFromRecordID():
		d.Verdict = Ambiguous
		d.Reason = fmt.Sprintf("its %s %q names no local record (deleted here, or lost in a restore)", obj.IDProperty, idv)
	default:
		d.Verdict = HubSpotNewer
		d.Reason = "made in HubSpot and never synced here (its creation webhook is missing)"
		if idv != "" {
			d.Reason = fmt.Sprintf("its %s %q names no local record: made in HubSpot and never synced here", obj.IDProperty, idv)
		}
	}
	return d, nil
}

// recordFor reports whether a local record holds the id property value.
func (s *Scanner) recordFor(ctx context.Context, obj mapping.Object, idv string) (bool, error) {
	var n int
	if obj.IDFromRecordID() {
		if err := s.db.QueryRowContext(ctx, s.q.Get("record_exists"), obj.ObjectType, idv).Scan(&n); err != nil {
			return false, fmt.Errorf("drift: find %s/%s: %w", obj.ObjectType, idv, err)
		}
		return n > 0, nil
	}
	if !plainField.MatchString(obj.IDField) {
		return false, fmt.Errorf("drift: id field %q of %s is not a plain name", obj.IDField, obj.ObjectType)
	}
	var id string
	var err error
	if obj.IDField == "email" {
		// HubSpot keeps emails in lower case, a local record perhaps not.
		args := []any{obj.ObjectType, idv}
		if s.dialect == store.MySQL {
			args = append(args, idv)
		}
		err = s.db.QueryRowContext(ctx, s.q.Get("record_by_email"), args...).Scan(&id)
	} else {
		err = s.db.QueryRowContext(ctx, s.q.Get("record_by_field"), obj.ObjectType, obj.IDField, idv).Scan(&id)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("drift: find %s by %s: %w", obj.ObjectType, obj.IDField, err)
	}
	return true, nil
}
