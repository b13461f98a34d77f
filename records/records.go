package records

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Defaults and limits of Config.
const (
	// MaxFieldsBytesDefault bounds the JSON encoding of one record's fields.
	MaxFieldsBytesDefault = 512 << 10
	// MaxFieldsDefault bounds the number of fields of one record.
	MaxFieldsDefault = 1000
	// MaxFieldNameBytes bounds a field name (the field clock column is VARCHAR(255)).
	MaxFieldNameBytes = 255
	// ListLimitDefault and ListLimitMax bound List pages.
	ListLimitDefault = 100
	ListLimitMax     = 1000
)

// DestinationsDefault are the destinations outbound events go to when
// Config.Destinations is nil.
var DestinationsDefault = []string{outbox.SyncSourceHubSpot}

// tombstoneField is the field clock that records when a record was deleted.
const tombstoneField = apply.DeletedClock

var (
	// ErrNotFound is returned for a record that does not exist.
	ErrNotFound = errors.New("records: not found")
	// ErrConflict is returned when the expected version is not the record's
	// current version: someone else changed it first. Read it again and retry.
	ErrConflict = errors.New("records: version conflict")
	// ErrEmailTaken is returned by Insert and Update for an email another
	// record of the object type holds, when the mapping upserts that type by
	// email (HubSpot keeps one contact per email); the records API answers
	// it with 409.
	ErrEmailTaken = errors.New("records: email taken")
	// ErrInvalid is returned for an invalid object type, field name, field value
	// or version.
	ErrInvalid = errors.New("records: invalid")
	// ErrTooLarge is returned when a record's fields exceed MaxFieldsBytes.
	ErrTooLarge = errors.New("records: fields too large")
	// ErrUnknownObjectType is returned for an object type outside
	// Config.ObjectTypes, when that list is set.
	ErrUnknownObjectType = errors.New("records: unknown object type")
)

var objectTypeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,49}$`)

// matchFieldRE restricts the fields an inbound change may be matched on, so the
// name can be spliced into a JSON path safely.
var matchFieldRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// Record is one CRM record.
type Record struct {
	ID         string
	ObjectType string
	// Version starts at 1 and grows by one with every change. A record
	// brought back under its id (HubSpot restored the object) continues from
	// its deletion's version (hubsync_record_gone), so a version read before
	// the deletion is a conflict.
	Version int64
	// Fields are the record's fields. Numbers read back from the database are
	// json.Number, so large integers (ids) keep every digit; encoding/json
	// writes them as JSON numbers. Their spelling depends on the database
	// (PostgreSQL writes 1e+21 as 1000000000000000000000): compare them by
	// value, not by text.
	Fields    map[string]any
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Config configures a Service. The zero value means the defaults.
type Config struct {
	// Destinations get one outbound event per write. nil means
	// DestinationsDefault (["hubspot"]); an empty non-nil slice means none.
	Destinations []string
	// ObjectTypes, when set, is the allow-list of object types; others fail with
	// ErrUnknownObjectType. Empty allows every valid name.
	ObjectTypes []string
	// Mapping is the mapping the outbound worker sends records through:
	// every record the API answers with lists the fields it will not send to
	// HubSpot ("unsynced_fields"), so a misspelt field shows at once. It
	// restricts no object type; ObjectTypes does. Insert and Update also
	// refuse an email another record holds for object types it upserts by
	// email (ErrEmailTaken). Default: mapping.Default() when Destinations
	// has "hubspot" (as the outbound worker's default), else none. Give the
	// records service and the workers the same mapping.
	Mapping *mapping.Set
	// Now stamps records and local field clocks. Default: the store's clock.
	Now func() time.Time
	// MaxFieldsBytes bounds one record's encoded fields; default MaxFieldsBytesDefault.
	MaxFieldsBytes int
	// MaxFields bounds the number of fields of one record; default MaxFieldsDefault.
	MaxFields int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// TracerProvider traces each write, with a link to the trace of each
	// outbound event it enqueued (see internal/eventtrace); nil traces nothing.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults(st store.Store) Config {
	if c.Destinations == nil {
		c.Destinations = DestinationsDefault
	}
	if c.Now == nil {
		c.Now = st.Now
	}
	if c.Mapping == nil && slices.Contains(c.Destinations, outbox.SyncSourceHubSpot) {
		c.Mapping = mapping.Default()
	}
	c.MaxFieldsBytes = cmp.Or(c.MaxFieldsBytes, MaxFieldsBytesDefault)
	c.MaxFields = cmp.Or(c.MaxFields, MaxFieldsDefault)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	for i, d := range c.Destinations {
		if d == "" || len(d) > 50 {
			return fmt.Errorf("records: Config.Destinations[%d] is %q; use a non-empty name of at most 50 bytes such as %q", i, d, outbox.SyncSourceHubSpot)
		}
		if slices.Index(c.Destinations, d) != i {
			return fmt.Errorf("records: Config.Destinations lists %q twice; list each destination once", d)
		}
	}
	for _, t := range c.ObjectTypes {
		if !objectTypeRE.MatchString(t) {
			return fmt.Errorf("records: Config.ObjectTypes has %q; object types match %s", t, objectTypeRE)
		}
	}
	if c.MaxFieldsBytes < 0 || c.MaxFields < 0 {
		return errors.New("records: Config.MaxFieldsBytes and MaxFields must not be negative (0 means the default)")
	}
	return nil
}

// Service reads and writes records and enqueues their events.
type Service struct {
	st      store.Store
	db      *sql.DB
	dialect store.Dialect
	links   *links.Links
	q       *dialectsql.Queries
	cfg     Config
	log     *slog.Logger
	tracer  trace.Tracer

	// testAttempt, set by tests only, runs first in every attempt of a
	// transaction (inTx).
	testAttempt func(tx *sql.Tx)
	// testLocked, set by tests only, runs in the transaction right after a
	// record's row is read for update.
	testLocked func(tx *sql.Tx, objectType, id string)
	// testLookedUp, set by tests only, runs in an apply's transaction right
	// after it found no record linked to an external id.
	testLookedUp func(objectType, externalID string)
	// testHanded, set by tests only, runs in an apply's transaction right
	// after it read (and locked) a record's unfinished writes (LinkMade).
	testHanded func()
}

// New returns a records service on st's database, which must have hubsync's
// migrations applied. lk stores the links to external ids; nil means
// links.New(st).
func New(st store.Store, lk *links.Links, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults(st)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	if lk == nil {
		lk = links.New(st)
	}
	return &Service{st: st, db: st.DB(), dialect: st.Dialect(), links: lk, q: q, cfg: cfg, log: cfg.Logger,
		tracer: eventtrace.Tracer(cfg.TracerProvider)}, nil
}

// ListOptions pages through List.
type ListOptions struct {
	// Limit is the page size; default ListLimitDefault, at most ListLimitMax.
	Limit int
	// After lists the records whose id sorts after this one (the last id of the
	// previous page). Ids are UUIDv7, so pages run in creation order.
	After string
}

// Get reads one record.
func (s *Service) Get(ctx context.Context, objectType, id string) (Record, error) {
	if err := s.checkType(objectType); err != nil {
		return Record{}, err
	}
	return s.get(ctx, s.db, "record_get", objectType, id)
}

// List reads a page of records of one type, in id order.
func (s *Service) List(ctx context.Context, objectType string, opts ListOptions) ([]Record, error) {
	if err := s.checkType(objectType); err != nil {
		return nil, err
	}
	if opts.Limit < 0 || opts.Limit > ListLimitMax {
		return nil, fmt.Errorf("%w: limit %d; use 1 to %d", ErrInvalid, opts.Limit, ListLimitMax)
	}
	if p := textcheck.Problem(opts.After); p != "" {
		return nil, fmt.Errorf("%w: after %q %s; pass the id of the last record of the previous page", ErrInvalid, opts.After, p)
	}
	limit := cmp.Or(opts.Limit, ListLimitDefault)
	rows, err := s.db.QueryContext(ctx, s.q.Get("record_list"), objectType, opts.After, limit)
	if err != nil {
		return nil, fmt.Errorf("records: list %s: %w", objectType, err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		r, err := s.scan(rows, objectType)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("records: list %s: %w", objectType, err)
	}
	return out, nil
}

// Insert creates a record with fields (nil values are dropped) and enqueues its
// record.created and create events.
func (s *Service) Insert(ctx context.Context, objectType string, fields map[string]any) (Record, error) {
	if err := s.checkType(objectType); err != nil {
		return Record{}, err
	}
	if err := s.checkNames(fields); err != nil {
		return Record{}, err
	}
	if err := s.checkSendable(objectType, fields); err != nil {
		return Record{}, err
	}
	ctx, span := s.startWrite(ctx, "insert", objectType, "")
	defer span.End()
	var rec Record
	err := s.inTx(ctx, func(tx *writeTx) error {
		var err error
		now := s.now()
		if err := s.checkEmailFree(ctx, tx.Tx, objectType, "", fields); err != nil {
			return err
		}
		if rec, err = s.createTx(ctx, tx, objectType, newID(), 1, fields); err != nil {
			return err
		}
		return s.touchClocks(ctx, tx.Tx, objectType, rec.ID, keys(fields), now)
	})
	eventtrace.Fail(span, err)
	return rec, err
}

// Update merges patch into the record's fields (a nil value removes the field)
// if the record is still at expectedVersion, and enqueues its events. It returns
// ErrConflict when the record has moved on and ErrNotFound when it does not
// exist. A patch that changes nothing writes nothing and returns the record as
// it is.
func (s *Service) Update(ctx context.Context, objectType, id string, expectedVersion int64, patch map[string]any) (Record, error) {
	if err := s.checkType(objectType); err != nil {
		return Record{}, err
	}
	if expectedVersion < 1 {
		return Record{}, fmt.Errorf("%w: version %d; versions start at 1", ErrInvalid, expectedVersion)
	}
	if err := s.checkNames(patch); err != nil {
		return Record{}, err
	}
	if err := s.checkSendable(objectType, patch); err != nil {
		return Record{}, err
	}
	ctx, span := s.startWrite(ctx, "update", objectType, id)
	defer span.End()
	var rec Record
	err := s.inTx(ctx, func(tx *writeTx) error {
		before, err := s.get(ctx, tx.Tx, "record_get_for_update", objectType, id)
		if err != nil {
			return err
		}
		if before.Version != expectedVersion {
			return conflict(objectType, id, expectedVersion, before.Version)
		}
		now := s.now()
		if v, ok := patch["email"].(string); ok && before.Fields["email"] != v {
			if err := s.checkEmailFree(ctx, tx.Tx, objectType, id, patch); err != nil {
				return err
			}
		}
		rec, err = s.updateTx(ctx, tx, before, patch)
		if err != nil {
			return err
		}
		// Only the fields whose value changed move their clock: a save that
		// rewrites a value as it is must not make an in-flight inbound change of
		// that field look stale.
		return s.touchClocks(ctx, tx.Tx, objectType, id, changedFields(before.Fields, rec.Fields, patch), now)
	})
	eventtrace.Fail(span, err)
	return rec, err
}

// Delete removes the record if it is still at expectedVersion and enqueues its
// record.deleted and delete events. The record's links are kept (the delete
// still has to reach each destination), a tombstone clock is written, and each
// linked external id gets a local-delete tombstone (apply.TombstoneLocalDeleted),
// so no later inbound change of it brings the record back until the source
// restores the object.
func (s *Service) Delete(ctx context.Context, objectType, id string, expectedVersion int64) error {
	if err := s.checkType(objectType); err != nil {
		return err
	}
	if expectedVersion < 1 {
		return fmt.Errorf("%w: version %d; versions start at 1", ErrInvalid, expectedVersion)
	}
	ctx, span := s.startWrite(ctx, "delete", objectType, id)
	defer span.End()
	err := s.inTx(ctx, func(tx *writeTx) error {
		before, err := s.get(ctx, tx.Tx, "record_get_for_update", objectType, id)
		if err != nil {
			return err
		}
		if before.Version != expectedVersion {
			return conflict(objectType, id, expectedVersion, before.Version)
		}
		now := s.now()
		if err := s.deleteTx(ctx, tx, before, false); err != nil {
			return err
		}
		if err := s.tombstoneLinksTx(ctx, tx.Tx, objectType, id, now); err != nil {
			return err
		}
		if err := s.touchClocks(ctx, tx.Tx, objectType, id, []string{tombstoneField, apply.LocalDeletedClock}, now); err != nil {
			return err
		}
		return s.forgetValueClocksTx(ctx, tx.Tx, objectType, id)
	})
	eventtrace.Fail(span, err)
	return err
}

// startWrite starts the span of a records write (op: insert, update, delete).
func (s *Service) startWrite(ctx context.Context, op, objectType, id string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attribute.String("hubsync.records.op", op), attribute.String("hubsync.object_type", objectType)}
	if id != "" {
		attrs = append(attrs, attribute.String("hubsync.record_id", id))
	}
	return s.tracer.Start(ctx, "hubsync.records.write", trace.WithAttributes(attrs...))
}

// tombstoneLinksTx writes a local-delete tombstone for each external id the
// record is linked to: the destination drops the link once it has archived the
// object, and a late inbound change of that id must not create the record
// again (apply.TombstoneLocalDeleted).
func (s *Service) tombstoneLinksTx(ctx context.Context, tx *sql.Tx, objectType, id string, at time.Time) error {
	for _, dest := range s.cfg.Destinations {
		ext, ok, err := s.links.LookupTx(ctx, tx, dest, objectType, id)
		if err != nil {
			return fmt.Errorf("records: links of %s/%s: %w", objectType, id, err)
		}
		if !ok {
			continue
		}
		if err := s.links.PutTombstoneTx(ctx, tx, links.Tombstone{
			Destination: dest, ObjectType: objectType, ExternalID: ext,
			Kind: links.TombstoneLocalDeleted, OccurredAt: at,
		}); err != nil {
			return fmt.Errorf("records: %w", err)
		}
	}
	return nil
}

// createTx inserts a record at version 1 and enqueues its events. The caller
// sets its field clocks.
// createTx inserts a record at version (1 for a new id; a record brought
// back under its id continues from its deletion's, goneVersion).
func (s *Service) createTx(ctx context.Context, tx *writeTx, objectType, id string, version int64, fields map[string]any) (Record, error) {
	clean := make(map[string]any, len(fields))
	for k, v := range fields {
		if v != nil {
			clean[k] = v
		}
	}
	enc, norm, err := s.encode(clean)
	if err != nil {
		return Record{}, err
	}
	now := s.now()
	rec := Record{ID: id, ObjectType: objectType, Version: version, Fields: norm, CreatedAt: now, UpdatedAt: now}
	if _, err := tx.ExecContext(ctx, s.q.Get("record_insert"), objectType, id, dialectsql.JSON(enc), rec.Version,
		dialectsql.Time(s.dialect, now), dialectsql.Time(s.dialect, now)); err != nil {
		return Record{}, fmt.Errorf("records: insert %s/%s: %w", objectType, id, err)
	}
	if err := s.emitTx(ctx, tx, store.EventRecordCreated, store.EventCreate, nil, rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// checkEmailFree refuses, with ErrEmailTaken, a write by the application
// that would give a record the email another record of its object type holds
// (whatever its case), when the mapping upserts that object type by
// email (contacts, by default): HubSpot keeps one contact per email, so the
// second record's upsert would overwrite the first one's contact before the
// outbound worker found the two records sharing it. id is the writing
// record's ("" for a new one). Inbound applies are not checked: HubSpot's
// own emails are unique, and an email moving between two contacts may
// arrive in any order. Two concurrent writes of one new email can both pass;
// the outbound worker then dead-letters the second (a link conflict).
func (s *Service) checkEmailFree(ctx context.Context, tx *sql.Tx, objectType, id string, fields map[string]any) error {
	email, ok := fields["email"].(string)
	if !ok || email == "" || !s.upsertsByEmail(objectType) {
		return nil
	}
	if t := strings.TrimSpace(email); t != email {
		// The outbound worker upserts by the trimmed address, so " ann@…"
		// would land on ann@…'s contact past the check below.
		return fmt.Errorf("%w: email %q has white space around it; HubSpot finds contacts by the address without it, so write %q", ErrInvalid, email, t)
	}
	other, err := s.emailOwner(ctx, tx, objectType, email, id)
	if err != nil {
		return err
	}
	if other != "" {
		return fmt.Errorf("%w: %s record %s already has email %q; HubSpot keeps one contact per email, so update that record (or delete one of the two) instead of writing it here", ErrEmailTaken, objectType, other, email)
	}
	if other, err = s.heldBy(ctx, tx, objectType, email, id); err != nil || other == "" {
		return err
	}
	return fmt.Errorf("%w: %s record %s holds email %q: HubSpot keeps it on that record's contact (a contact merged into it had it, or it was added there); update that record instead of writing the email here", ErrEmailTaken, objectType, other, email)
}

// emailOwner returns another record of objectType (not id) whose email is
// email, whatever the case, or "" for none.
func (s *Service) emailOwner(ctx context.Context, tx *sql.Tx, objectType, email, id string) (string, error) {
	// Lower-cased here as well as in SQL: SQLite's lower() folds ASCII only.
	var other string
	err := tx.QueryRowContext(ctx, s.q.Get("record_find_email_holder"), s.emailHolderArgs(objectType, strings.ToLower(email), id)...).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) && s.dialect == store.SQLite && !isASCII(email) {
		// A stored "ÄDA@…" is "Äda@…" to SQLite's lower(): compare in Go.
		other, err = s.scanEmails(ctx, tx, "record_email_scan", email, objectType, id)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("records: look up the email of %s: %w", objectType, err)
	}
	return other, nil
}

// heldBy returns the live record other than id that holds email as a
// merged-away email (hubsync_email_alias), or "" for none.
func (s *Service) heldBy(ctx context.Context, q store.DBTX, objectType, email, id string) (string, error) {
	var other string
	err := q.QueryRowContext(ctx, s.q.Get("email_alias_holder"), objectType, strings.ToLower(email), id).Scan(&other)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("records: look up the merged emails of %s: %w", objectType, err)
	}
	return other, nil
}

// scanEmails returns the first record that query (rows of id and email,
// with args) lists whose email is email in Go's lower case, or
// sql.ErrNoRows: SQLite's lower() folds ASCII only.
func (s *Service) scanEmails(ctx context.Context, tx *sql.Tx, query, email string, args ...any) (string, error) {
	rows, err := tx.QueryContext(ctx, s.q.Get(query), args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	want := strings.ToLower(email)
	for rows.Next() {
		var rid, e string
		if err := rows.Scan(&rid, &e); err != nil {
			return "", err
		}
		if strings.ToLower(e) == want {
			return rid, nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return "", sql.ErrNoRows
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// upsertsByEmail reports whether the mapping writes objectType to HubSpot by
// email (IDField "email"): one object per email.
func (s *Service) upsertsByEmail(objectType string) bool {
	if s.cfg.Mapping == nil {
		return false
	}
	obj, ok := s.cfg.Mapping.Lookup(objectType)
	return ok && obj.IDField == "email"
}

// emailHolderArgs are record_find_email_holder's parameters on s's dialect.
func (s *Service) emailHolderArgs(objectType, email, id string) []any {
	if s.dialect == store.MySQL {
		return []any{objectType, email, email, id}
	}
	return []any{objectType, email, id}
}

// updateTx writes before's fields merged with patch at the next version, unless
// nothing changes, and enqueues its events. The caller holds the row (read
// for update at before.Version).
func (s *Service) updateTx(ctx context.Context, tx *writeTx, before Record, patch map[string]any) (Record, error) {
	merged := make(map[string]any, len(before.Fields)+len(patch))
	for k, v := range before.Fields {
		merged[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	enc, norm, err := s.encode(merged)
	if err != nil {
		return Record{}, err
	}
	if sameJSON(before.Fields, norm) {
		return before, nil
	}
	after := before
	after.Version++
	after.Fields = norm
	after.UpdatedAt = s.now()
	res, err := tx.ExecContext(ctx, s.q.Get("record_update"), dialectsql.JSON(enc), after.Version,
		dialectsql.Time(s.dialect, after.UpdatedAt), before.ObjectType, before.ID, before.Version)
	if err != nil {
		return Record{}, fmt.Errorf("records: update %s/%s: %w", before.ObjectType, before.ID, err)
	}
	if err := oneRow(res, before); err != nil {
		return Record{}, err
	}
	// The row is changed (and locked) before the events are inserted, so
	// concurrent writers of one record enqueue in commit order.
	if err := s.emitTx(ctx, tx, store.EventRecordUpdated, store.EventUpdate, &before, after); err != nil {
		return Record{}, err
	}
	return after, nil
}

// deleteTx deletes the record at before.Version and enqueues its events. A
// privacy delete keeps no field values in the events.
func (s *Service) deleteTx(ctx context.Context, tx *writeTx, before Record, privacy bool) error {
	res, err := tx.ExecContext(ctx, s.q.Get("record_delete"), before.ObjectType, before.ID, before.Version)
	if err != nil {
		return fmt.Errorf("records: delete %s/%s: %w", before.ObjectType, before.ID, err)
	}
	if err := oneRow(res, before); err != nil {
		return err
	}
	after := before
	after.Version++
	after.UpdatedAt = s.now()
	if _, err := tx.ExecContext(ctx, s.q.Get("record_gone_put"), before.ObjectType, before.ID, after.Version); err != nil {
		return fmt.Errorf("records: remember the version of deleted %s/%s: %w", before.ObjectType, before.ID, err)
	}
	if privacy {
		before.Fields = map[string]any{}
		after.Fields = map[string]any{}
		if err := s.forgetTx(ctx, tx.Tx, before.ObjectType, before.ID); err != nil {
			return err
		}
	} else if _, err := tx.ExecContext(ctx, s.q.Get("email_alias_forget"), before.ObjectType, before.ID); err != nil {
		// A deleted record holds no emails: none is refused for it, and no
		// later privacy deletion has to find them (a record deleted here is
		// unlinked by its archive). A HubSpot restore brings the record
		// back; drift then holds its contact's emails again.
		return fmt.Errorf("records: forget the merged emails of %s/%s: %w", before.ObjectType, before.ID, err)
	}
	return s.emitTx(ctx, tx, store.EventRecordDeleted, store.EventDelete, &before, after)
}

// forgetValueClocksTx removes the field clocks of deleted record id but its
// $-clocks (clock_delete_values.sql): nothing reads them while it is
// deleted, and a restore starts afresh. Called last in a deletion's
// transaction, after it looked for links, so a clock row another
// transaction holds stops it where its own clock writes would.
func (s *Service) forgetValueClocksTx(ctx context.Context, tx *sql.Tx, objectType, id string) error {
	if _, err := tx.ExecContext(ctx, s.q.Get("clock_delete_values"), objectType, id); err != nil {
		return fmt.Errorf("records: forget the field clocks of deleted %s/%s: %w", objectType, id, err)
	}
	return nil
}

// forgetTx forgets what a privacy-deleted record left outside its row: the
// states pushed to each destination, which hold its values, and the
// merged-away emails it holds.
func (s *Service) forgetTx(ctx context.Context, tx *sql.Tx, objectType, id string) error {
	dests := slices.Clone(s.cfg.Destinations)
	if src := outbox.SyncSource(ctx); src != "" && !slices.Contains(dests, src) {
		dests = append(dests, src)
	}
	for _, d := range dests {
		if err := s.links.ForgetPushedTx(ctx, tx, d, objectType, id); err != nil {
			return fmt.Errorf("records: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.q.Get("email_alias_forget"), objectType, id); err != nil {
		return fmt.Errorf("records: forget the merged emails of %s/%s: %w", objectType, id, err)
	}
	return nil
}

// goneVersion returns the version a record of this id was deleted at, 0
// when none was, read by query (record_gone_get, or record_gone_get_current
// in a transaction that waited for a deletion).
func (s *Service) goneVersion(ctx context.Context, q store.DBTX, query, objectType, id string) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, s.q.Get(query), objectType, id).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("records: read the version of deleted %s/%s: %w", objectType, id, err)
	}
	return v, nil
}

// emitTx enqueues the internal event and one outbound event per destination
// (unless the change came from that destination) for one change.
func (s *Service) emitTx(ctx context.Context, tx *writeTx, internalType, outboundType string, before *Record, after Record) error {
	src := outbox.SyncSource(ctx)
	var meta map[string]string
	if src != "" {
		meta = map[string]string{outbox.MetadataSyncSource: src}
	}
	payload, err := outbox.Snapshot{ID: after.ID, Version: after.Version, Fields: after.Fields, Metadata: meta}.Marshal()
	if err != nil {
		return err
	}
	internalMeta, err := json.Marshal(map[string]string{outbox.MetadataSyncSource: src})
	if err != nil {
		return err
	}
	if _, err := s.st.Internal().EnqueueTx(ctx, tx.Tx, store.InternalEvent{
		ID: newID(), EventType: internalType, ObjectType: after.ObjectType, RecordID: after.ID,
		Payload: payload, Metadata: internalMeta,
	}); err != nil {
		return fmt.Errorf("records: enqueue %s of %s/%s: %w", internalType, after.ObjectType, after.ID, err)
	}
	var old json.RawMessage
	if before != nil {
		if old, err = (outbox.Snapshot{ID: before.ID, Version: before.Version, Fields: before.Fields}).Marshal(); err != nil {
			return err
		}
	}
	for _, dest := range s.cfg.Destinations {
		res, err := outbox.EnqueueTx(ctx, s.st, tx.Tx, store.OutboundEvent{
			ID: newID(), Destination: dest, ObjectType: after.ObjectType, RecordID: after.ID,
			EventType: outboundType, Payload: payload, OldPayload: old,
		})
		if err != nil {
			return fmt.Errorf("records: %w", err)
		}
		if res.Inserted {
			tx.enqueued = append(tx.enqueued, res.ID)
		}
	}
	return nil
}

// changedFields returns the names of patch whose value differs between before
// and after (a field added, removed or given a different value), in order.
func changedFields(before, after map[string]any, patch map[string]any) []string {
	var out []string
	for _, k := range keys(patch) {
		b, inBefore := before[k]
		a, inAfter := after[k]
		if inBefore != inAfter || (inBefore && !sameJSON(b, a)) {
			out = append(out, k)
		}
	}
	return out
}

// touchClocks advances the field clocks of names to at (never backwards):
// one statement for one or two names (a property change and the record's
// apply.SeenClock), and one for all of them otherwise (a creation carries
// every field of the record).
func (s *Service) touchClocks(ctx context.Context, tx *sql.Tx, objectType, id string, names []string, at time.Time) error {
	enc := dialectsql.Time(s.dialect, at)
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	switch len(names) {
	case 0:
		return nil
	case 1:
		if _, err := tx.ExecContext(ctx, s.q.Get("clock_upsert"), objectType, id, names[0], enc); err != nil {
			return fmt.Errorf("records: field clock %s/%s.%s: %w", objectType, id, names[0], err)
		}
		return nil
	case 2:
		if _, err := tx.ExecContext(ctx, s.q.Get("clock_upsert_pair"), objectType, id, names[0], enc, objectType, id, names[1], enc); err != nil {
			return fmt.Errorf("records: field clocks %s/%s %s, %s: %w", objectType, id, names[0], names[1], err)
		}
		return nil
	}
	list, err := json.Marshal(names)
	if err != nil {
		return fmt.Errorf("records: field clocks of %s/%s: %w", objectType, id, err)
	}
	if _, err := tx.ExecContext(ctx, s.q.Get("clock_upsert_many"), objectType, id, enc, string(list)); err != nil {
		return fmt.Errorf("records: field clocks %s/%s %s: %w", objectType, id, strings.Join(names, ", "), err)
	}
	return nil
}

// clocks reads the field clocks of a record.
func (s *Service) clocks(ctx context.Context, tx *sql.Tx, objectType, id string) (map[string]time.Time, error) {
	rows, err := tx.QueryContext(ctx, s.q.Get("clock_list"), objectType, id)
	if err != nil {
		return nil, fmt.Errorf("records: field clocks of %s/%s: %w", objectType, id, err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var f string
		var t time.Time
		if err := rows.Scan(&f, dialectsql.TimeDest(&t)); err != nil {
			return nil, fmt.Errorf("records: field clocks of %s/%s: %w", objectType, id, err)
		}
		out[f] = t
	}
	return out, rows.Err()
}

func (s *Service) get(ctx context.Context, q store.DBTX, query, objectType, id string) (Record, error) {
	if id == "" {
		return Record{}, fmt.Errorf("%w: %s with an empty id", ErrNotFound, objectType)
	}
	if textcheck.Problem(id) != "" || strings.HasSuffix(id, " ") {
		// No record has such an id: PostgreSQL refuses the first as text,
		// and MariaDB would match the second to the id without its trailing
		// spaces (PAD SPACE), which is another record's spelling.
		return Record{}, fmt.Errorf("%w: %s/%q", ErrNotFound, objectType, id)
	}
	row := q.QueryRowContext(ctx, s.q.Get(query), objectType, id)
	rec, err := s.scan(row, objectType)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("%w: %s/%s", ErrNotFound, objectType, id)
	}
	if err == nil && s.testLocked != nil && query == "record_get_for_update" {
		if tx, ok := q.(*sql.Tx); ok {
			s.testLocked(tx, objectType, id)
		}
	}
	return rec, err
}

type scanner interface{ Scan(dest ...any) error }

func (s *Service) scan(row scanner, objectType string) (Record, error) {
	r := Record{ObjectType: objectType}
	var fields []byte
	if err := row.Scan(&r.ID, &r.Version, &fields, dialectsql.TimeDest(&r.CreatedAt), dialectsql.TimeDest(&r.UpdatedAt)); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Record{}, err
		}
		return Record{}, fmt.Errorf("records: read %s: %w", objectType, err)
	}
	m, err := decodeFields(fields)
	if err != nil {
		return Record{}, fmt.Errorf("records: read %s/%s: %w", objectType, r.ID, err)
	}
	r.Fields = m
	return r, nil
}

func decodeFields(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// encode validates and encodes fields, and returns them as they will read back,
// up to the spelling of numbers: PostgreSQL's jsonb writes 1e+21 as
// 1000000000000000000000 and MySQL 2.50 as 2.5 (see sameJSON).
func (s *Service) encode(fields map[string]any) ([]byte, map[string]any, error) {
	if len(fields) > s.cfg.MaxFields {
		return nil, nil, fmt.Errorf("%w: %d fields; at most %d are allowed", ErrTooLarge, len(fields), s.cfg.MaxFields)
	}
	if err := s.checkNames(fields); err != nil {
		return nil, nil, err
	}
	if fields == nil {
		fields = map[string]any{}
	}
	enc, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: fields are not JSON: %v", ErrInvalid, err)
	}
	if len(enc) > s.cfg.MaxFieldsBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes of fields; at most %d are allowed", ErrTooLarge, len(enc), s.cfg.MaxFieldsBytes)
	}
	norm, err := decodeFields(enc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return enc, norm, nil
}

func (s *Service) checkType(objectType string) error {
	if !objectTypeRE.MatchString(objectType) {
		return fmt.Errorf("%w: object type %q; use lower-case letters, digits and _ (at most 50, starting with a letter)", ErrInvalid, objectType)
	}
	if len(s.cfg.ObjectTypes) > 0 && !slices.Contains(s.cfg.ObjectTypes, objectType) {
		return fmt.Errorf("%w: %q", ErrUnknownObjectType, objectType)
	}
	return nil
}

func (s *Service) checkNames(fields map[string]any) error {
	if len(fields) > s.cfg.MaxFields {
		return fmt.Errorf("%w: %d fields; at most %d are allowed", ErrTooLarge, len(fields), s.cfg.MaxFields)
	}
	for k, v := range fields {
		if err := checkFieldName(k); err != nil {
			return err
		}
		if err := checkValue(k, v); err != nil {
			return err
		}
	}
	return nil
}

// checkSendable refuses values of mapped fields that the outbound worker
// could never send (Config.Mapping): an object or array, a number beyond
// float64's range. Accepted, such a value would dead-letter the record's
// every write until the field changes, its other fields never reaching
// HubSpot.
func (s *Service) checkSendable(objectType string, fields map[string]any) error {
	if s.cfg.Mapping == nil {
		return nil
	}
	obj, ok := s.cfg.Mapping.Lookup(objectType)
	if !ok {
		return nil
	}
	if _, err := obj.ToHubSpot(fields); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// checkValue refuses text no database stores the same way: a NUL character
// (PostgreSQL's jsonb rejects \u0000, SQLite and MySQL keep it) and invalid
// UTF-8 (which JSON encoding would silently replace). Every database then
// answers the same input the same way. It looks into objects and arrays,
// keys included.
func checkValue(field string, v any) error { return checkNested(field, v, 0) }

// MaxValueDepth is the deepest a field's value may nest arrays and objects:
// it is stored two deeper, in a snapshot's fields ({"fields":{"name":…}}),
// and MariaDB's JSON column refuses a document deeper than
// textcheck.MaxJSONDepth.
const MaxValueDepth = textcheck.MaxJSONDepth - 2

// checkNested is checkValue of a value nested depth arrays and objects deep.
func checkNested(field string, v any, depth int) error {
	switch v.(type) {
	case map[string]any, []any:
		if depth++; depth > MaxValueDepth {
			return fmt.Errorf("%w: field %q nests arrays and objects more than %d deep", ErrInvalid, field, MaxValueDepth)
		}
	}
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: field %q holds a NUL character (\\u0000), which not every database stores; remove it", ErrInvalid, field)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: field %q is not valid UTF-8 text", ErrInvalid, field)
		}
	case map[string]any:
		for k, x := range v {
			if err := checkNested(field, k, depth); err != nil {
				return err
			}
			if err := checkNested(field, x, depth); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkNested(field, x, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFieldName(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: empty field name", ErrInvalid)
	case len(k) > MaxFieldNameBytes:
		return fmt.Errorf("%w: field name %.40q... is longer than %d bytes", ErrInvalid, k, MaxFieldNameBytes)
	case !utf8.ValidString(k) || strings.ContainsRune(k, 0):
		return fmt.Errorf("%w: field name %q is not valid text", ErrInvalid, k)
	case strings.HasPrefix(k, "$"):
		return fmt.Errorf("%w: field name %q; names starting with $ are reserved", ErrInvalid, k)
	case strings.HasSuffix(k, " "):
		// MariaDB compares "a " and "a" as equal: the two would share a clock.
		return fmt.Errorf("%w: field name %q ends in a space; remove it", ErrInvalid, k)
	}
	return nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// writeTx is one attempt of a records transaction.
type writeTx struct {
	*sql.Tx
	// enqueued are the ids of the outbound events the attempt enqueued; the
	// write's span links to them once the attempt has committed.
	enqueued []string
	// superseded are the ids of the dead letters of records a source's
	// change deleted in the attempt (recordTx.DeleteRecord): re-queued once
	// the attempt has committed.
	superseded []string
}

// inTx runs fn in a transaction and commits it. A transaction that fails
// with a transient error of the database (store.Store.Retryable: a deadlock,
// serialization failure or lock wait timeout) is run again whole, from a
// fresh writeTx (dialectsql.Retry): fn must keep nothing from a failed
// attempt but what it assigns anew. What must happen once, after the commit,
// happens here.
func (s *Service) inTx(ctx context.Context, fn func(tx *writeTx) error) error {
	var committed *writeTx
	err := dialectsql.Retry(ctx, s.st.Retryable, func() error {
		w := &writeTx{}
		err := dialectsql.InTx(ctx, s.db, "records", func(tx *sql.Tx) error {
			w.Tx = tx
			if s.testAttempt != nil {
				s.testAttempt(tx)
			}
			return fn(w)
		})
		if err == nil {
			committed = w
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range committed.enqueued {
		eventtrace.LinkEnqueued(ctx, id)
	}
	if len(committed.superseded) > 0 {
		s.requeueSuperseded(ctx, committed.superseded)
	}
	return nil
}

func oneRow(res sql.Result, before Record) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("records: write %s/%s: %w", before.ObjectType, before.ID, err)
	}
	if n != 1 {
		// The row was read for update at this version, so this means a writer
		// got past the lock: report it as the conflict it is.
		return fmt.Errorf("%w: %s/%s changed while it was being written", ErrConflict, before.ObjectType, before.ID)
	}
	return nil
}

func conflict(objectType, id string, expected, current int64) error {
	return &ConflictError{ObjectType: objectType, ID: id, Expected: expected, Current: current}
}

// ConflictError reports a stale expected version. It matches ErrConflict.
type ConflictError struct {
	ObjectType, ID    string
	Expected, Current int64
}

// Error says which version was expected and which is current.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("records: version conflict on %s/%s: expected version %d, current is %d; read the record again and retry", e.ObjectType, e.ID, e.Expected, e.Current)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// newID returns a UUIDv7: ids sort in creation order, and within one process
// they are strictly increasing, which keeps events of one record in order even
// when the clock does not move.
func newID() string { return uuid.Must(uuid.NewV7()).String() }
