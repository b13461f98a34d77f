package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

var _ apply.FencedApplier = (*Service)(nil)

// Apply applies one inbound change in one transaction with the rules of
// apply.Guarded (the per-field monotonic guard, tombstones of deleted and
// merged-away external ids, merge redirects), over the record table, its field
// clocks and links.Links. Local writes advance the clocks of the fields whose
// value they change (to the store clock's now), so an inbound change older than
// a local edit of a field is stale; a save that leaves a value as it was moves
// no clock.
// A change whose values equal the record's writes no new version and no events.
//
// Besides what apply.Guarded checks, the object type must be allowed
// (Config.ObjectTypes), field names valid and MatchField a plain name. Invalid
// changes fail with an error matching apply.ErrPermanent.
func (s *Service) Apply(ctx context.Context, ch apply.Change) (apply.Result, error) {
	return s.ApplyFenced(ctx, ch, nil)
}

// ApplyFenced is Apply with fence run first in the transaction that applies
// the change (nil means none): the SyncWorker completes the inbound event
// there under its lease, so a worker that lost its lease changes nothing. The
// inbound queue must be on the Service's database.
func (s *Service) ApplyFenced(ctx context.Context, ch apply.Change, fence apply.Fence) (apply.Result, error) {
	if err := s.checkChange(ch); err != nil {
		return apply.Result{}, fmt.Errorf("records: apply %s %s %s/%s: %w: %w", ch.Source, ch.Kind, ch.ObjectType, ch.ExternalID, apply.ErrPermanent, err)
	}
	g := apply.Guarded{Store: (*recordStore)(s)}
	res, err := g.ApplyFenced(ctx, ch, fence)
	if err != nil {
		return apply.Result{}, fmt.Errorf("records: %w", err)
	}
	if ch.Kind == store.EventMerge {
		return s.remerge(ctx, g, ch, res)
	}
	return res, nil
}

// remerge applies a merge again when, after it committed, one of its
// merged ids is linked: the outbound worker linked a record it had just
// created to the object while the merge was applied (the merge found no
// record for it, and unlinks every merged id it finds). Applied again, the
// merge re-points or deletes that record too. The outbound worker checks
// the merge's tombstone after its link commits (outbound.Config.
// OnLinkedMergedAway): whichever of the two checks comes second sees the
// other's write.
func (s *Service) remerge(ctx context.Context, g apply.Guarded, ch apply.Change, res apply.Result) (apply.Result, error) {
	for _, ext := range ch.MergedIDs {
		if ext == "" || ext == ch.ExternalID {
			continue
		}
		if _, linked, err := s.links.LookupRecord(ctx, ch.Source, ch.ObjectType, ext); err != nil {
			return apply.Result{}, fmt.Errorf("records: check the links of merged %s %s: %w", ch.ObjectType, ext, err)
		} else if linked {
			again, err := g.Apply(ctx, ch)
			if err != nil {
				return apply.Result{}, fmt.Errorf("records: apply the merge into %s %s again: %w", ch.ObjectType, ch.ExternalID, err)
			}
			return again, nil
		}
	}
	return res, nil
}

// checkChange checks what apply.Guarded leaves to the store: names.
func (s *Service) checkChange(ch apply.Change) error {
	if err := s.checkType(ch.ObjectType); err != nil {
		return err
	}
	if ch.MatchField != "" && ch.MatchField != mapping.RecordIDField && !matchFieldRE.MatchString(ch.MatchField) {
		return fmt.Errorf("%w: match field %q; use letters, digits and _", ErrInvalid, ch.MatchField)
	}
	return s.checkNames(ch.Fields)
}

// recordStore is the Service as an apply.RecordStore.
type recordStore Service

var _ apply.RecordStore = (*recordStore)(nil)

// InTx runs fn in one transaction; invalid or too large values are permanent.
func (rs *recordStore) InTx(ctx context.Context, fn func(apply.RecordTx) error) error {
	s := (*Service)(rs)
	err := s.inTx(ctx, func(tx *writeTx) error {
		return fn(&recordTx{s: s, tx: tx, locked: map[string]Record{}})
	})
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge) {
		err = fmt.Errorf("%w: %w", apply.ErrPermanent, err)
	}
	return err
}

// recordTx is one transaction of recordStore. It keeps the records it locked,
// since updateTx and deleteTx write at the version read under the lock.
type recordTx struct {
	s      *Service
	tx     *writeTx
	locked map[string]Record // by object type and id
	fresh  map[string]bool   // ids NewRecordID gave out: linked to nothing
	// updatedFrom holds each record UpdateRecord wrote as it was before its
	// first write in the transaction (Resend sends what changed since).
	updatedFrom map[string]Record
}

var _ apply.SQLRecordTx = (*recordTx)(nil)

// DBTX returns the transaction, for the SyncWorker's fence.
func (t *recordTx) DBTX() store.DBTX { return t.tx.Tx }

func lockKey(objectType, id string) string { return objectType + "/" + id }

func (t *recordTx) LookupRecord(ctx context.Context, source, objectType, externalID string) (string, bool, error) {
	id, ok, err := t.s.links.LookupRecordTx(ctx, t.tx.Tx, source, objectType, externalID)
	if err == nil && !ok && t.s.testLookedUp != nil {
		t.s.testLookedUp(objectType, externalID)
	}
	return id, ok, err
}

// emailField is the one field whose match reads an index
// (record_find_unlinked_email): the default mapping's id_field for contacts.
// A match by any other field reads every record of its object type.
const emailField = "email"

func (t *recordTx) MatchRecord(ctx context.Context, source, objectType, field, value string) (string, bool, error) {
	var id string
	var err error
	switch field {
	case mapping.RecordIDField:
		// The external object holds the local record id itself (companies and
		// deals of the default mapping): the record created it, and its link
		// is not recorded yet.
		err = t.tx.QueryRowContext(ctx, t.s.q.Get("record_find_unlinked_id"), objectType, value, source).Scan(&id)
	case emailField:
		// Contacts of the default mapping: an index finds the records with
		// this email (migration 026).
		args := []any{objectType, value, source}
		if t.s.dialect == store.MySQL { // positional: the join's destination first, the value twice
			args = []any{source, objectType, value, value}
		}
		err = t.tx.QueryRowContext(ctx, t.s.q.Get("record_find_unlinked_email"), args...).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) && t.s.dialect == store.SQLite && !isASCII(value) {
			// A stored "ÄDA@…" is "Äda@…" to SQLite's lower(): compare in Go.
			id, err = t.s.scanEmails(ctx, t.tx.Tx, "record_email_scan_unlinked", value, objectType, source)
		}
	default:
		args := []any{objectType, field, value, source}
		if t.s.dialect == store.MySQL { // positional: the join's destination first
			args = []any{source, objectType, field, value}
		}
		err = t.tx.QueryRowContext(ctx, t.s.q.Get("record_find_unlinked"), args...).Scan(&id)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("match %s by %s: %w", objectType, field, err)
	}
	return id, true, nil
}

func (t *recordTx) Link(ctx context.Context, source, objectType, id, externalID string) error {
	if t.fresh[id] {
		// A record being created: nobody else knows its id, so it has no
		// link, and the external id's owner is found by the insert itself.
		delete(t.fresh, id)
		return t.s.links.LinkNewTx(ctx, t.tx.Tx, source, objectType, id, externalID)
	}
	return t.s.links.LinkTx(ctx, t.tx.Tx, source, objectType, id, externalID)
}

func (t *recordTx) UnlinkExternal(ctx context.Context, source, objectType, externalID string) error {
	return t.s.links.UnlinkExternalTx(ctx, t.tx.Tx, source, objectType, externalID)
}

func (t *recordTx) NewRecordID() string {
	id := newID()
	if t.fresh == nil {
		t.fresh = map[string]bool{}
	}
	t.fresh[id] = true
	return id
}

func (t *recordTx) Tombstone(ctx context.Context, source, objectType, externalID string) (apply.Tombstone, bool, error) {
	tomb, ok, err := t.s.links.TombstoneTx(ctx, t.tx.Tx, source, objectType, externalID)
	if err != nil || !ok {
		return apply.Tombstone{}, ok, err
	}
	return apply.Tombstone{Kind: tomb.Kind, SurvivorID: tomb.SurvivorID, OccurredAt: tomb.OccurredAt}, true, nil
}

func (t *recordTx) PutTombstone(ctx context.Context, source, objectType, externalID string, tomb apply.Tombstone) error {
	return t.s.links.PutTombstoneTx(ctx, t.tx.Tx, links.Tombstone{
		Destination: source, ObjectType: objectType, ExternalID: externalID,
		Kind: tomb.Kind, SurvivorID: tomb.SurvivorID, OccurredAt: tomb.OccurredAt,
	})
}

func (t *recordTx) RemoveTombstone(ctx context.Context, source, objectType, externalID string, before time.Time) error {
	return t.s.links.RemoveTombstoneTx(ctx, t.tx.Tx, source, objectType, externalID, before)
}

func (t *recordTx) LockRecord(ctx context.Context, objectType, id string) (bool, error) {
	rec, err := t.s.get(ctx, t.tx.Tx, "record_get_for_update", objectType, id)
	switch {
	case errors.Is(err, ErrNotFound):
		delete(t.locked, lockKey(objectType, id))
		return false, nil
	case err != nil:
		return false, err
	}
	t.locked[lockKey(objectType, id)] = rec
	return true, nil
}

func (t *recordTx) lockedRecord(objectType, id string) (Record, error) {
	rec, ok := t.locked[lockKey(objectType, id)]
	if !ok {
		return Record{}, fmt.Errorf("records: %s/%s is written without LockRecord", objectType, id)
	}
	return rec, nil
}

func (t *recordTx) Clocks(ctx context.Context, objectType, id string) (map[string]time.Time, error) {
	return t.s.clocks(ctx, t.tx.Tx, objectType, id)
}

func (t *recordTx) AdvanceClocks(ctx context.Context, objectType, id string, names []string, at time.Time) error {
	return t.s.touchClocks(ctx, t.tx.Tx, objectType, id, names, at)
}

func (t *recordTx) ClearFieldClocks(ctx context.Context, objectType, id string) error {
	if _, err := t.tx.ExecContext(ctx, t.s.q.Get("clock_delete_fields"), objectType, id); err != nil {
		return fmt.Errorf("clear field clocks of %s/%s: %w", objectType, id, err)
	}
	return nil
}

func (t *recordTx) CreateRecord(ctx context.Context, objectType, id string, fields map[string]any) error {
	gone, err := t.s.goneVersion(ctx, t.tx.Tx, "record_gone_get", objectType, id)
	if err != nil {
		return err
	}
	_, err = t.s.createTx(ctx, t.tx, objectType, id, gone+1, fields)
	return err
}

func (t *recordTx) UpdateRecord(ctx context.Context, objectType, id string, patch map[string]any) error {
	before, err := t.lockedRecord(objectType, id)
	if err != nil {
		return err
	}
	after, err := t.s.updateTx(ctx, t.tx, before, patch)
	if err != nil {
		return err
	}
	k := lockKey(objectType, id)
	if _, ok := t.updatedFrom[k]; !ok {
		if t.updatedFrom == nil {
			t.updatedFrom = map[string]Record{}
		}
		t.updatedFrom[k] = before
	}
	t.locked[k] = after
	return nil
}

var _ apply.Resender = (*recordTx)(nil)

// Resend enqueues, for destination source, a write of the fields a change
// from source has just changed, when a write of the record's to source may
// have overwritten them there: one is queued or in flight (it was planned
// before this change was applied, or it is planned next; the latter then
// leaves these fields out, and the resend repeats HubSpot's own values), or
// the last one was recorded after the change's time at and the record it
// wrote held other values for them (the pushed state keeps the record, not
// which fields the call carried, so this errs toward a resend). HubSpot keeps the last write it receives, and the guard kept the
// newer change here, so without the resend the two sides would differ. The
// event is a local change of the record (before → after, its version the
// applied one's), queued after the write it follows; it carries
// outbox.MetadataResent. Any other change needs no resend: no write of ours
// followed it at the source.
func (t *recordTx) Resend(ctx context.Context, source, objectType, id, externalID string, fields []string, at time.Time) error {
	if !slices.Contains(t.s.cfg.Destinations, source) {
		return nil
	}
	k := lockKey(objectType, id)
	before, ok := t.updatedFrom[k]
	after := t.locked[k]
	if !ok || after.Version == before.Version {
		return nil
	}
	patch := make(map[string]any, len(fields))
	for _, f := range fields {
		patch[f] = nil
	}
	changed := changedFields(before.Fields, after.Fields, patch)
	if len(changed) == 0 {
		return nil
	}
	why, err := t.overwritten(ctx, source, objectType, id, externalID, changed, after, at)
	if err != nil || why == "" {
		return err
	}
	payload, err := outbox.Snapshot{ID: after.ID, Version: after.Version, Fields: after.Fields, Metadata: map[string]string{outbox.MetadataResent: source}}.Marshal()
	if err != nil {
		return err
	}
	old, err := outbox.Snapshot{ID: before.ID, Version: before.Version, Fields: before.Fields}.Marshal()
	if err != nil {
		return err
	}
	res, err := outbox.EnqueueTx(outbox.WithSyncSource(ctx, ""), t.s.st, t.tx.Tx, store.OutboundEvent{
		ID: newID(), Destination: source, ObjectType: objectType, RecordID: id,
		EventType: store.EventUpdate, Payload: payload, OldPayload: old,
	})
	if err != nil {
		return fmt.Errorf("records: resend %s/%s to %s: %w", objectType, id, source, err)
	}
	if res.Inserted {
		t.tx.enqueued = append(t.tx.enqueued, res.ID)
	}
	t.s.log.Info("records: a change from the destination may have been overwritten there by a write of this record's; sending it back",
		"destination", source, "record", k, "fields", changed, "why", why)
	return nil
}

// overwritten says why a write of record id to destination may have
// overwritten there the fields changed, which a change of the destination's
// at time at set to after's values ("" when none can have). One query reads
// whether a write is queued or in flight and the record's pushed state (see
// links.Pushed), whose LastModifiedDate is when the store recorded that the
// destination accepted it: a state for another object (a stale one) or an
// archive says nothing of this object's fields.
func (t *recordTx) overwritten(ctx context.Context, destination, objectType, id, externalID string, changed []string, after Record, at time.Time) (string, error) {
	var (
		open    bool
		ext     sql.NullString
		fields  sql.NullString
		deleted sql.NullBool
		stored  *time.Time
	)
	err := t.tx.QueryRowContext(ctx, t.s.q.Get("record_overwrite_state"), destination, objectType, id, destination, objectType, id).
		Scan(&open, &ext, &fields, &deleted, dialectsql.NullTimeDest(&stored))
	if err != nil {
		return "", fmt.Errorf("records: writes of %s/%s to %s: %w", objectType, id, destination, err)
	}
	if open {
		return "a write of the record is queued or in flight", nil
	}
	if !ext.Valid || deleted.Bool || ext.String != externalID || stored == nil || !stored.After(at) || !fields.Valid {
		return "", nil
	}
	var pushed map[string]any
	dec := json.NewDecoder(strings.NewReader(fields.String))
	dec.UseNumber()
	if err := dec.Decode(&pushed); err != nil {
		return "", fmt.Errorf("records: decode the pushed fields of %s/%s: %w", objectType, id, err)
	}
	for _, f := range changed {
		if !sameJSON(pushed[f], after.Fields[f]) {
			return "the record's last write reached the destination after the change", nil
		}
	}
	return "", nil
}

var (
	_ apply.UnrecordedWrites  = (*recordTx)(nil)
	_ apply.UnrecordedCreates = (*recordTx)(nil)
)

// lastHanded returns when an unfinished write of record id to destination
// that a worker claimed was last in a worker's hands: the latest
// LastModifiedDate of such events (a claim, a lease extension, a release or
// a retry), or the end of the lease of one held now or by a worker that
// died (no call of it is answered later). ok is false when there is none: a
// dead-lettered write is not counted, since most end with HubSpot's refusal,
// and one retried only by an operator. The events are locked (PostgreSQL,
// MySQL), so no claim of them commits before the caller's transaction.
func (t *recordTx) lastHanded(ctx context.Context, destination, objectType, id string) (last time.Time, ok bool, err error) {
	rows, err := t.tx.QueryContext(ctx, t.s.q.Get("record_open_writes"), destination, objectType, id)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("records: the writes of %s/%s: %w", objectType, id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var attempt int
		var modified time.Time
		var lease *time.Time
		if err := rows.Scan(&status, &attempt, dialectsql.TimeDest(&modified), dialectsql.NullTimeDest(&lease)); err != nil {
			return time.Time{}, false, fmt.Errorf("records: the writes of %s/%s: %w", objectType, id, err)
		}
		if attempt == 0 {
			continue // never handed to a worker
		}
		ok = true
		if status == string(store.StatusProcessing) && lease != nil && lease.After(modified) {
			modified = *lease
		}
		if modified.After(last) {
			last = modified
		}
	}
	if err := rows.Err(); err != nil {
		return time.Time{}, false, fmt.Errorf("records: the writes of %s/%s: %w", objectType, id, err)
	}
	return last, ok, nil
}

// madeSkew is the clock skew LinkMade allows between this database's clock
// (a record's creation) and the source's (an object's creation): the record
// may be that much younger than the object. handedSkew is the one it allows
// the other way (a write handed to a worker that much before the object's
// deletion counts as after it): the smaller, since a write after the
// deletion left unseen is the worse mistake (LinkMade).
const (
	madeSkew   = time.Minute
	handedSkew = 5 * time.Second
)

// LinkMade implements apply.UnrecordedCreates for a record locked by
// LockRecord: its link is read as it is now (record_link_now), so a link
// the write's retry committed after the record was matched is seen, and the
// link is inserted, never moved (links.LinkNewTx), so one committed after
// that read fails the change, which is retried.
func (t *recordTx) LinkMade(ctx context.Context, destination, objectType, id, externalID string, createdAt, deletedAt time.Time) (bool, error) {
	rec, err := t.lockedRecord(objectType, id)
	if err != nil {
		return false, err
	}
	if createdAt.Before(rec.CreatedAt.Add(-madeSkew)) {
		return false, nil // the object is older than the record
	}
	handed, ok, err := t.lastHanded(ctx, destination, objectType, id)
	if t.s.testHanded != nil {
		t.s.testHanded()
	}
	switch {
	case err != nil:
		return false, err
	case !ok:
		return false, nil // no unfinished write of it may have reached the destination
	case !handed.Before(deletedAt.Add(-handedSkew)):
		return false, nil // a write since the deletion may have made another object
	}
	var one int
	err = t.tx.QueryRowContext(ctx, t.s.q.Get("record_link_now"), destination, objectType, id).Scan(&one)
	switch {
	case err == nil:
		return false, nil // linked meanwhile: the write was recorded
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("records: the link of %s/%s: %w", objectType, id, err)
	}
	if err := t.s.links.LinkNewTx(ctx, t.tx.Tx, destination, objectType, id, externalID); err != nil {
		return false, fmt.Errorf("records: %w", err)
	}
	return true, nil
}

// MayHaveWritten reports whether a write of the record to destination may
// have reached it unrecorded: one of its outbound events for destination was
// claimed and is not done, or was dead-lettered (see apply.UnrecordedWrites).
func (t *recordTx) MayHaveWritten(ctx context.Context, destination, objectType, id string) (bool, error) {
	var written bool
	if err := t.tx.QueryRowContext(ctx, t.s.q.Get("record_may_have_written"), destination, objectType, id).Scan(&written); err != nil {
		return false, fmt.Errorf("records: writes of %s/%s to %s: %w", objectType, id, destination, err)
	}
	return written, nil
}

var _ apply.MergeRecorder = (*recordTx)(nil)

// MaxAliasEmailLength is the longest email (in characters) kept as held by a
// merge's survivor (hubsync_email_alias.Email); RFC 5321 allows 254.
const MaxAliasEmailLength = 320

// MergedAway keeps the email of a record merged into survivorID as held by
// it (see checkEmailFree), where the mapping upserts the type by email, with
// the emails the merged record held.
func (t *recordTx) MergedAway(ctx context.Context, objectType, mergedID, survivorID string) error {
	before, err := t.lockedRecord(objectType, mergedID)
	if err != nil {
		return err
	}
	if mergedID != survivorID {
		if _, err := t.tx.ExecContext(ctx, t.s.q.Get("email_alias_move"), survivorID, objectType, mergedID); err != nil {
			return fmt.Errorf("records: hand the emails of %s/%s to %s: %w", objectType, mergedID, survivorID, err)
		}
	}
	email, ok := before.Fields["email"].(string)
	if !ok || email == "" || !t.s.upsertsByEmail(objectType) {
		return nil
	}
	if utf8.RuneCountInString(email) > MaxAliasEmailLength {
		// Longer than any address HubSpot keeps: the merge must not fail
		// for it (and every later change of the survivor wait behind it).
		t.s.log.Warn("records: the email of a merged record is too long to keep as held by its survivor", "object_type", objectType, "record", mergedID, "survivor", survivorID, "length", len(email))
		return nil
	}
	if _, err := t.tx.ExecContext(ctx, t.s.q.Get("email_alias_put"), objectType, strings.ToLower(email), survivorID); err != nil {
		return fmt.Errorf("records: keep the email of %s/%s merged into %s: %w", objectType, mergedID, survivorID, err)
	}
	return nil
}

var _ apply.PrivacyForgetter = (*recordTx)(nil)

// ForgetRecord forgets what record id, deleted before, left outside its row
// (see forgetTx), for a privacy deletion that came after its deletion.
func (t *recordTx) ForgetRecord(ctx context.Context, objectType, id string) error {
	return t.s.forgetTx(ctx, t.tx.Tx, objectType, id)
}

func (t *recordTx) DeleteRecord(ctx context.Context, objectType, id string, privacy bool) error {
	before, err := t.lockedRecord(objectType, id)
	if err != nil {
		return err
	}
	if err := t.s.deleteTx(ctx, t.tx, before, privacy); err != nil {
		return err
	}
	if err := t.s.forgetValueClocksTx(ctx, t.tx.Tx, objectType, id); err != nil {
		return err
	}
	delete(t.locked, lockKey(objectType, id))
	if privacy {
		// Not re-queued: no pushed state is left to guard a write of the
		// person's old values. They stay for an operator to discard.
		return nil
	}
	return t.supersede(ctx, objectType, id)
}

// supersede notes the dead letters of a record that the source of ctx
// (outbox.SyncSource) deleted, in that source's queue only, to be re-queued
// once the transaction commits (Service.requeueSuperseded). Another
// destination's dead letters stay: the deletion queued a delete for it, and
// its worker has no view of the source's deletion to resolve them by.
func (t *recordTx) supersede(ctx context.Context, objectType, id string) error {
	source := outbox.SyncSource(ctx)
	if source == "" {
		return nil
	}
	rows, err := t.tx.QueryContext(ctx, t.s.q.Get("record_dead_letters"), source, objectType, id)
	if err != nil {
		return fmt.Errorf("records: dead letters of %s/%s: %w", objectType, id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var ev string
		if err := rows.Scan(&ev); err != nil {
			return fmt.Errorf("records: dead letters of %s/%s: %w", objectType, id, err)
		}
		t.tx.superseded = append(t.tx.superseded, ev)
	}
	return rows.Err()
}
