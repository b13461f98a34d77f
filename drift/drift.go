package drift

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Defaults and limits of Config.
const (
	// PageSizeDefault is how many records one page compares: one batch read
	// with history each. HubSpot limits reads with history to 50 inputs.
	PageSizeDefault = hubspot.MaxHistoryBatchInputs
	// PageSizeMax is the largest page.
	PageSizeMax = hubspot.MaxHistoryBatchInputs
	// BudgetKeyDefault is the shared budget key the scan's calls count against
	// (the sync's own key: the calls are HubSpot's calls like any other).
	BudgetKeyDefault = "hubspot"
	// RepairSource is the changeSource of the inbound changes a repair
	// enqueues, and the prefix of their idempotency keys.
	RepairSource = "HUBSYNC_DRIFT"
)

// Scan phases, the keys of the cursor table.
const (
	phaseRecords = "records"
	phaseHubSpot = "hubspot"
)

// Reader reads HubSpot objects; *hubspot.Client satisfies it.
type Reader interface {
	BatchReadWithHistory(ctx context.Context, t hubspot.ObjectType, ids []string, properties, history []string) (*hubspot.BatchResult, error)
	List(ctx context.Context, t hubspot.ObjectType, properties []string, after string, limit int) (*hubspot.ListPage, error)
}

var _ Reader = (*hubspot.Client)(nil)

// Config configures a Scanner. Zero fields take their defaults.
type Config struct {
	// Store is hubsync's database (required): records, links, field clocks,
	// the queues and the cursor.
	Store store.Store
	// Records is the records service repairs to HubSpot go through (required).
	Records *records.Service
	// Links are the record ↔ HubSpot id links; default links.New(Store).
	Links *links.Links
	// HubSpot reads objects (required).
	HubSpot Reader
	// Budget is the budget every HubSpot call is reserved from; nil means
	// unlimited. Pass a *budget.Share so that the scan uses at most its share
	// of the window (see budget.ShareDefault).
	Budget budget.Budget
	// BudgetKey is the key calls are reserved under; default BudgetKeyDefault.
	BudgetKey string
	// Mapping is the field mapping; default mapping.Default().
	Mapping *mapping.Set
	// AppID is this app's HubSpot id: a property version written by it is
	// hubsync's own write. Without it no version is recognised as hubsync's.
	AppID string
	// Destination and Source name HubSpot in links and queues; default "hubspot".
	Destination string
	// PageSize is the records per page; default PageSizeDefault, at most PageSizeMax.
	PageSize int
	// Policy is the policy of object types without one (Policies, or the
	// mapping's drift_policy); default PolicyReport.
	Policy Policy
	// Policies are per-object policies; they win over the mapping file's.
	Policies map[string]Policy
	// SkipOrphans turns off the walk of HubSpot's objects for orphans.
	SkipOrphans bool
	// Now is the clock; default the store's.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Links == nil && c.Store != nil {
		c.Links = links.New(c.Store)
	}
	c.BudgetKey = cmp.Or(c.BudgetKey, BudgetKeyDefault)
	if c.Mapping == nil {
		c.Mapping = mapping.Default()
	}
	c.Destination = cmp.Or(c.Destination, outbox.SyncSourceHubSpot)
	c.PageSize = cmp.Or(c.PageSize, PageSizeDefault)
	if c.Now == nil && c.Store != nil {
		c.Now = c.Store.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("drift: Config.Store is nil; pass hubsync's store"))
	}
	if c.Records == nil {
		errs = append(errs, errors.New("drift: Config.Records is nil; pass the records service (repairs to HubSpot go through it)"))
	}
	if c.HubSpot == nil {
		errs = append(errs, errors.New("drift: Config.HubSpot is nil; pass a *hubspot.Client"))
	}
	if c.PageSize < 1 || c.PageSize > PageSizeMax {
		errs = append(errs, fmt.Errorf("drift: Config.PageSize is %d; use 1..%d (HubSpot's limit for reads with history), or 0 for %d", c.PageSize, PageSizeMax, PageSizeDefault))
	}
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		errs = append(errs, fmt.Errorf("drift: Config.Policy: %w", err))
	}
	for t, p := range c.Policies {
		if _, err := ParsePolicy(string(p)); err != nil {
			errs = append(errs, fmt.Errorf("drift: Config.Policies[%s]: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

// Scanner finds and repairs drift between hubsync's records and HubSpot.
// It is safe for use by one scan at a time per database (two scans would
// share one cursor).
type Scanner struct {
	cfg     Config
	db      *sql.DB
	dialect store.Dialect
	q       *dialectsql.Queries
	log     *slog.Logger
}

// New returns a Scanner.
func New(cfg Config) (*Scanner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q, err := dialectsql.Load(sqlFS, "sql", cfg.Store.Dialect())
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	return &Scanner{cfg: cfg, db: cfg.Store.DB(), dialect: cfg.Store.Dialect(), q: q, log: cfg.Logger}, nil
}

// Options are the choices of one Run.
type Options struct {
	// DryRun reports what a repair would do and enqueues nothing. It starts
	// from the beginning and leaves the cursor alone.
	DryRun bool
	// ObjectTypes limits the scan; default every mapped object type.
	ObjectTypes []string
	// Policies override the configured ones for this run.
	Policies map[string]Policy
}

// Run scans every object type: its local records in pages (compared with
// HubSpot, each page one batch read with history through the budget), then,
// unless SkipOrphans, HubSpot's objects for orphans. After each page the
// cursor is stored, so a Run stopped by ctx (or a crash) is resumed by the
// next Run; the report then covers what that Run saw. A ctx error returns the
// report so far with the error.
func (s *Scanner) Run(ctx context.Context, opts Options) (*Report, error) {
	types := opts.ObjectTypes
	if len(types) == 0 {
		types = slices.Sorted(slices.Values(s.cfg.Mapping.ObjectTypes()))
	}
	rep := newReport(opts.DryRun)
	for _, t := range types {
		obj, ok := s.cfg.Mapping.Lookup(t)
		if !ok {
			return rep, fmt.Errorf("drift: object type %q is not in the mapping; use one of %s", t, strings.Join(s.cfg.Mapping.ObjectTypes(), ", "))
		}
		pol := s.policy(obj, opts)
		rep.Scanned[t], rep.HubSpotScanned[t] = rep.Scanned[t], rep.HubSpotScanned[t] // listed even when 0
		if err := s.scanRecords(ctx, obj, pol, opts.DryRun, rep); err != nil {
			return rep, err
		}
		if !s.cfg.SkipOrphans {
			if err := s.scanHubSpot(ctx, obj, pol, opts.DryRun, rep); err != nil {
				return rep, err
			}
		}
	}
	rep.Complete = true
	return rep, nil
}

func (s *Scanner) policy(obj mapping.Object, opts Options) Policy {
	if p, ok := opts.Policies[obj.ObjectType]; ok {
		return p
	}
	if p, ok := s.cfg.Policies[obj.ObjectType]; ok {
		return p
	}
	if obj.DriftPolicy != "" {
		p, _ := ParsePolicy(obj.DriftPolicy) // validated by the mapping file
		return p
	}
	return s.cfg.Policy
}

// scanRecords walks the local records of one type in pages.
func (s *Scanner) scanRecords(ctx context.Context, obj mapping.Object, pol Policy, dry bool, rep *Report) error {
	after := ""
	if !dry {
		var err error
		if after, err = s.cursor(ctx, phaseRecords, obj.ObjectType); err != nil {
			return err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := s.cfg.Records.List(ctx, obj.ObjectType, records.ListOptions{Limit: s.cfg.PageSize, After: after})
		if err != nil {
			return fmt.Errorf("drift: list %s: %w", obj.ObjectType, err)
		}
		if len(page) == 0 {
			if dry {
				return nil
			}
			return s.clearCursor(ctx, phaseRecords, obj.ObjectType)
		}
		if err := s.comparePage(ctx, obj, pol, dry, page, rep); err != nil {
			return err
		}
		after = page[len(page)-1].ID
		if !dry {
			if err := s.putCursor(ctx, phaseRecords, obj.ObjectType, after); err != nil {
				return err
			}
		}
	}
}

// comparePage compares one page of local records with HubSpot.
func (s *Scanner) comparePage(ctx context.Context, obj mapping.Object, pol Policy, dry bool, page []records.Record, rep *Report) error {
	ids := make([]string, len(page))
	for i, r := range page {
		ids[i] = r.ID
	}
	linked, err := s.cfg.Links.LookupMany(ctx, s.cfg.Destination, obj.ObjectType, ids)
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	busy, err := s.openSet(ctx, "open_outbound", s.cfg.Destination, obj.ObjectType, ids)
	if err != nil {
		return err
	}
	var ext []string
	for _, id := range ids {
		if e := linked[id]; e != "" {
			ext = append(ext, e)
		}
	}
	busyExt, err := s.openSet(ctx, "open_inbound", s.cfg.Destination, obj.ObjectType, ext)
	if err != nil {
		return err
	}
	clocks, err := s.clocks(ctx, obj.ObjectType, ids)
	if err != nil {
		return err
	}
	var toRead []records.Record
	for _, r := range page {
		e := linked[r.ID]
		if busy[r.ID] || (e != "" && busyExt[e]) {
			rep.Skipped[obj.ObjectType]++
			continue
		}
		rep.Scanned[obj.ObjectType]++
		if e != "" {
			toRead = append(toRead, r)
			continue
		}
		d := Difference{
			Kind: KindMissingLink, ObjectType: obj.ObjectType, RecordID: r.ID, Verdict: LocalNewer,
			Reason: "no HubSpot link and nothing queued for HubSpot: HubSpot never accepted the record", Repair: ToHubSpot,
		}
		if err := s.resendWhole(ctx, obj, pol, dry, &d, r); err != nil {
			return err
		}
		rep.add(d)
	}
	if len(toRead) == 0 {
		return nil
	}
	extIDs := make([]string, len(toRead))
	for i, r := range toRead {
		extIDs[i] = linked[r.ID]
	}
	props := obj.HubSpotProperties()
	res, err := s.read(ctx, rep, func() (*hubspot.BatchResult, error) {
		return s.cfg.HubSpot.BatchReadWithHistory(ctx, hubspot.ObjectType(obj.HubSpotType), extIDs, props, props)
	})
	if err != nil {
		return fmt.Errorf("drift: read %d %s from HubSpot: %w", len(extIDs), obj.HubSpotType, err)
	}
	now := s.cfg.Now().UTC()
	for _, r := range toRead {
		e := linked[r.ID]
		o := res.ResultByID(e)
		if o == nil || o.Archived {
			rep.add(Difference{
				Kind: KindGone, ObjectType: obj.ObjectType, RecordID: r.ID, HubSpotID: e, Verdict: Ambiguous,
				Reason: "the linked HubSpot object is gone (deleted or merged) and no change says when; restore it in HubSpot or delete the record",
			})
			continue
		}
		diffs, err := s.compare(obj, r, o, clocks[r.ID])
		if err != nil {
			return err
		}
		if len(diffs) == 0 {
			continue
		}
		if err := s.repairFields(ctx, obj, pol, dry, r, o, diffs, now); err != nil {
			return err
		}
		for _, d := range diffs {
			rep.add(*d)
		}
	}
	return nil
}

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

// repairFields repairs the differing fields of one record: the fields to
// send go in one outbound event, each field to apply locally is one inbound
// change.
func (s *Scanner) repairFields(ctx context.Context, obj mapping.Object, pol Policy, dry bool, r records.Record, o *hubspot.Object, diffs []*Difference, now time.Time) error {
	theirs := map[string]any{}
	var out []*Difference
	for _, d := range diffs {
		d.Repair = decide(d, pol)
		switch d.Repair {
		case ToHubSpot:
			f, _ := obj.LocalField(d.Property)
			v, err := obj.FromHubSpot(map[string]string{d.Property: d.HubSpot})
			if err != nil || f.Direction == mapping.ToHubSpotOnly {
				v = map[string]any{f.Local: d.HubSpot} // not parsed inbound: its text will do as "before"
			}
			theirs[f.Local] = v[f.Local]
			out = append(out, d)
		case ToLocal:
			if dry {
				continue
			}
			// The change carries HubSpot's timestamp, so the SyncWorker's
			// guard applies it only over an older local value; a policy that
			// overrides a newer local value carries the scan's time instead.
			at := now
			if d.Verdict == HubSpotNewer && d.HubSpotAt != nil {
				at = *d.HubSpotAt
			}
			if err := s.enqueueChange(ctx, obj, o.ID, d.Property, d.HubSpot, at); err != nil {
				return err
			}
			d.Repaired = true
		}
	}
	if len(out) == 0 || dry {
		return nil
	}
	if _, err := s.cfg.Records.Resend(ctx, obj.ObjectType, r.ID, theirs); err != nil {
		if errors.Is(err, records.ErrNotFound) {
			return nil // deleted since the page was read: its delete is queued
		}
		return fmt.Errorf("drift: repair %s/%s to HubSpot: %w", obj.ObjectType, r.ID, err)
	}
	for _, d := range out {
		d.Repaired = true
	}
	return nil
}

// resendWhole repairs a missing link: the whole record goes to HubSpot.
func (s *Scanner) resendWhole(ctx context.Context, obj mapping.Object, pol Policy, dry bool, d *Difference, r records.Record) error {
	d.Repair = decide(d, pol)
	if d.Repair != ToHubSpot || dry {
		return nil
	}
	if _, err := s.cfg.Records.Resend(ctx, obj.ObjectType, r.ID, nil); err != nil {
		if errors.Is(err, records.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("drift: repair %s/%s to HubSpot: %w", obj.ObjectType, r.ID, err)
	}
	d.Repaired = true
	return nil
}

// enqueueChange enqueues a property change for the SyncWorker, as if HubSpot
// had sent it: the worker applies it under the monotonic guard, in the
// record's order, fenced by its lease. Its idempotency key is derived from
// the object, property, value and time, so a second scan finding the same
// drift before the first repair is applied enqueues nothing.
func (s *Scanner) enqueueChange(ctx context.Context, obj mapping.Object, objectID, prop, value string, at time.Time) error {
	ms := at.UnixMilli()
	ev := inbound.Event{
		Version: inbound.EventVersion, Source: s.cfg.Destination,
		SubscriptionType: cmp.Or(obj.WebhookName, obj.ObjectType) + ".propertyChange",
		HubSpotObject:    cmp.Or(obj.WebhookName, obj.ObjectType), ObjectType: obj.ObjectType,
		EventType: store.EventUpdate, ObjectID: objectID, OccurredAt: ms,
		PropertyName: prop, PropertyValue: &value, ChangeSource: RepairSource,
	}
	key := repairKey("update", obj.ObjectType, objectID, prop, value, ms)
	return s.enqueueInbound(ctx, obj, objectID, store.EventUpdate, ev, key)
}

// enqueueCreation enqueues a creation of a HubSpot object for the SyncWorker,
// which reads the object and creates (or, by the id property, links) its record.
func (s *Scanner) enqueueCreation(ctx context.Context, obj mapping.Object, o hubspot.Object) error {
	ms := max(o.UpdatedAt.UnixMilli(), o.CreatedAt.UnixMilli())
	ev := inbound.Event{
		Version: inbound.EventVersion, Source: s.cfg.Destination,
		SubscriptionType: cmp.Or(obj.WebhookName, obj.ObjectType) + ".creation",
		HubSpotObject:    cmp.Or(obj.WebhookName, obj.ObjectType), ObjectType: obj.ObjectType,
		EventType: store.EventCreate, ObjectID: o.ID, OccurredAt: ms, ChangeSource: RepairSource,
	}
	return s.enqueueInbound(ctx, obj, o.ID, store.EventCreate, ev, repairKey("create", obj.ObjectType, o.ID, "", "", ms))
}

func (s *Scanner) enqueueInbound(ctx context.Context, obj mapping.Object, objectID, kind string, ev inbound.Event, key string) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("drift: encode repair of %s %s: %w", obj.ObjectType, objectID, err)
	}
	if _, err := s.cfg.Store.Inbound().Enqueue(ctx, store.InboundEvent{
		ID: newID(), Source: s.cfg.Destination, ExternalID: objectID, ObjectType: obj.ObjectType,
		EventType: kind, Payload: payload, IdempotencyKey: key,
	}); err != nil {
		return fmt.Errorf("drift: enqueue repair of %s %s: %w", obj.ObjectType, objectID, err)
	}
	return nil
}

func repairKey(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return "drift:" + hex.EncodeToString(h.Sum(nil))[:40]
}

// read makes one HubSpot call after reserving it from the budget, waiting
// (on a timer, cancelled with ctx) while the budget refuses.
func (s *Scanner) read(ctx context.Context, rep *Report, call func() (*hubspot.BatchResult, error)) (*hubspot.BatchResult, error) {
	if err := s.reserve(ctx); err != nil {
		return nil, err
	}
	rep.HubSpotCalls++
	return call()
}

func (s *Scanner) reserve(ctx context.Context) error {
	if s.cfg.Budget == nil {
		return nil
	}
	for {
		res, err := s.cfg.Budget.Reserve(ctx, s.cfg.BudgetKey, 1)
		if err != nil {
			return fmt.Errorf("drift: budget: %w", err)
		}
		if res.Granted {
			return nil
		}
		wait := max(res.RetryAfter, 10*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

var plainField = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// scanHubSpot walks HubSpot's objects of one type for orphans.
func (s *Scanner) scanHubSpot(ctx context.Context, obj mapping.Object, pol Policy, dry bool, rep *Report) error {
	after := ""
	if !dry {
		var err error
		if after, err = s.cursor(ctx, phaseHubSpot, obj.ObjectType); err != nil {
			return err
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
				if err := s.enqueueCreation(ctx, obj, o); err != nil {
					return err
				}
				d.Repaired = true
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
	err := s.db.QueryRowContext(ctx, s.q.Get("record_by_field"), obj.ObjectType, obj.IDField, idv).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) && obj.IDProperty == "email" {
		lower := strings.ToLower(idv)
		if lower != idv {
			err = s.db.QueryRowContext(ctx, s.q.Get("record_by_field"), obj.ObjectType, obj.IDField, lower).Scan(&id)
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("drift: find %s by %s: %w", obj.ObjectType, obj.IDField, err)
	}
	return true, nil
}
