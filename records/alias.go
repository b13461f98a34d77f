package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// HeldEmails is what HoldEmails did with the emails it was given.
type HeldEmails struct {
	// Held are the emails the record holds now and did not before (in a dry
	// run: would hold), in lower case.
	Held []string
	// Taken maps each email another live record has as its own to that
	// record: not held, since holding it would refuse that record's next
	// write. HubSpot merged that record's contact away (or moved the
	// address); the record is drift of its own.
	Taken map[string]string
}

// HoldEmails keeps emails as held by record id, as MergedAway does for the
// merges the SyncWorker applies: a new record with one of them, or a write
// of one to another record, gets ErrEmailTaken instead of being upserted
// onto the contact that has it. It is for the emails HubSpot keeps on a
// contact besides its own (hs_additional_emails: those of contacts merged
// into it, and addresses added by hand), found by a drift scan: merges
// applied before hubsync kept their emails, or whose webhook never came.
//
// The record's own email, emails already held by it, blank ones and ones
// longer than MaxAliasEmailLength are skipped; an email held by another
// record moves to this one (HubSpot says where it is now). Nothing is
// written when dry is true, or when objectType is not upserted by email.
func (s *Service) HoldEmails(ctx context.Context, objectType, id string, emails []string, dry bool) (HeldEmails, error) {
	var out HeldEmails
	if err := s.checkType(objectType); err != nil {
		return out, err
	}
	if !s.upsertsByEmail(objectType) {
		return out, nil
	}
	err := s.inTx(ctx, func(tx *writeTx) error {
		out = HeldEmails{}
		rec, err := s.get(ctx, tx.Tx, "record_get_for_update", objectType, id)
		if err != nil {
			return err
		}
		own, _ := rec.Fields["email"].(string)
		own = strings.ToLower(strings.TrimSpace(own))
		seen := map[string]bool{}
		for _, e := range emails {
			e = strings.ToLower(strings.TrimSpace(e))
			if e == "" || e == own || seen[e] || utf8.RuneCountInString(e) > MaxAliasEmailLength {
				continue
			}
			seen[e] = true
			holder, err := s.aliasHolder(ctx, tx.Tx, objectType, e)
			if err != nil {
				return err
			}
			if holder == id {
				continue
			}
			other, err := s.emailOwner(ctx, tx.Tx, objectType, e, id)
			if err != nil {
				return err
			}
			if other != "" {
				if out.Taken == nil {
					out.Taken = map[string]string{}
				}
				out.Taken[e] = other
				continue
			}
			out.Held = append(out.Held, e)
			if dry {
				continue
			}
			if _, err := tx.ExecContext(ctx, s.q.Get("email_alias_put"), objectType, e, id); err != nil {
				return fmt.Errorf("records: keep email of %s/%s: %w", objectType, id, err)
			}
		}
		return nil
	})
	return out, err
}

// aliasHolder returns the record that holds email ("" for none).
func (s *Service) aliasHolder(ctx context.Context, tx *sql.Tx, objectType, email string) (string, error) {
	var holder string
	err := tx.QueryRowContext(ctx, s.q.Get("email_alias_get"), objectType, email).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("records: look up the merged emails of %s: %w", objectType, err)
	}
	return holder, nil
}

// EmailHeldBy returns the record that holds email as a merged-away email
// (see HoldEmails) other than record id, or "" when none does or objectType
// is not upserted by email. A record with such an email would be upserted
// onto that record's contact.
func (s *Service) EmailHeldBy(ctx context.Context, objectType, id, email string) (string, error) {
	if strings.TrimSpace(email) == "" || !s.upsertsByEmail(objectType) {
		return "", nil
	}
	return s.heldBy(ctx, s.db, objectType, strings.TrimSpace(email), id)
}
