package drift

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
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
	// MaxDifferencesDefault is how many differences a report lists by
	// default: every one of a routine scan (drift is usually a handful), and a
	// few MB of memory and of JSON when a mass drift (a mapping change, a
	// restore) would otherwise list one per record and field.
	MaxDifferencesDefault = 10_000
	// MaxDifferencesMax is the most differences a report may list: about
	// 50 MB of memory and of JSON (listed values are cut at
	// ListedValueMax), on a replica that also runs the workers. A larger
	// drift is read from the totals, or scanned an object type at a time.
	MaxDifferencesMax = 100_000
	// ListedValueMax is the longest value, in bytes, a listed difference
	// shows of each side; a longer one is cut and ends in "…". The repair
	// has used the whole value by then.
	ListedValueMax = 1024
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
	// MaxDifferences is the most differences a report lists
	// (Report.Differences); those found past it are counted and repaired
	// alike, only not listed (Report.Omitted). Default MaxDifferencesDefault.
	MaxDifferences int
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
	c.MaxDifferences = cmp.Or(c.MaxDifferences, MaxDifferencesDefault)
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
	if c.MaxDifferences < 0 || c.MaxDifferences > MaxDifferencesMax {
		errs = append(errs, fmt.Errorf("drift: Config.MaxDifferences is %d; use 1..%d (the most differences a report lists; the rest are counted), or 0 for %d", c.MaxDifferences, MaxDifferencesMax, MaxDifferencesDefault))
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
	// MaxDifferences overrides Config.MaxDifferences for this run; 0 keeps it.
	MaxDifferences int
}

// Run scans every object type: its local records in pages (compared with
// HubSpot, each page one batch read with history through the budget), then,
// unless SkipOrphans, HubSpot's objects for orphans. After each page the
// cursor is stored, so a Run stopped by ctx (or a crash) is resumed by the
// next Run; the report then covers what that Run saw and names where it
// resumed (Report.ResumedAfter). The report counts every difference and
// lists the first MaxDifferences of them (Report.Omitted counts the rest),
// so that its size does not grow with the drift. A ctx error
// returns the report so far with the error.
func (s *Scanner) Run(ctx context.Context, opts Options) (*Report, error) {
	types := opts.ObjectTypes
	if len(types) == 0 {
		types = slices.Sorted(slices.Values(s.cfg.Mapping.ObjectTypes()))
	}
	if opts.MaxDifferences < 0 || opts.MaxDifferences > MaxDifferencesMax {
		return nil, fmt.Errorf("drift: Options.MaxDifferences is %d; use 1..%d, or 0 for the scanner's (Config.MaxDifferences, %d)", opts.MaxDifferences, MaxDifferencesMax, s.cfg.MaxDifferences)
	}
	rep := newReport(opts.DryRun, cmp.Or(opts.MaxDifferences, s.cfg.MaxDifferences))
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
		if after != "" {
			rep.resumed(obj.ObjectType, phaseRecords, after)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A policy repair to the local side is stamped with the time the
		// page was read: it overrides the values compared, and the guard
		// keeps a local edit made since (while the scan waited for the budget
		// or HubSpot's answer), which then goes to HubSpot.
		asOf := s.cfg.Now().UTC()
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
		if err := s.comparePage(ctx, obj, pol, dry, page, asOf, rep); err != nil {
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

// comparePage compares one page of local records, read at asOf, with HubSpot.
func (s *Scanner) comparePage(ctx context.Context, obj mapping.Object, pol Policy, dry bool, page []records.Record, asOf time.Time, rep *Report) error {
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
	var toRead, missing []records.Record
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
		missing = append(missing, r)
	}
	if err := s.readAndCompare(ctx, obj, pol, dry, toRead, linked, clocks, asOf, rep); err != nil {
		return err
	}
	// Last, so that the emails this page's contacts hold (holdEmails) are
	// held before a record with one is resent.
	for _, r := range missing {
		if err := s.repairMissingLink(ctx, obj, pol, dry, r, rep); err != nil {
			return err
		}
	}
	return nil
}

// readAndCompare reads the linked objects of toRead from HubSpot and
// compares each with its record.
func (s *Scanner) readAndCompare(ctx context.Context, obj mapping.Object, pol Policy, dry bool, toRead []records.Record, linked map[string]string, clocks map[string]map[string]time.Time, asOf time.Time, rep *Report) error {
	if len(toRead) == 0 {
		return nil
	}
	extIDs := make([]string, len(toRead))
	for i, r := range toRead {
		extIDs[i] = linked[r.ID]
	}
	props := obj.HubSpotProperties()
	read := props
	if obj.IDField == "email" {
		read = append(slices.Clip(props), additionalEmails)
	}
	res, err := s.read(ctx, rep, func() (*hubspot.BatchResult, error) {
		return s.cfg.HubSpot.BatchReadWithHistory(ctx, hubspot.ObjectType(obj.HubSpotType), extIDs, read, props)
	})
	if err != nil {
		return fmt.Errorf("drift: read %d %s from HubSpot: %w", len(extIDs), obj.HubSpotType, err)
	}
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
		if obj.IDField == "email" {
			if err := s.holdEmails(ctx, obj, dry, r, o, rep); err != nil {
				return err
			}
		}
		diffs, err := s.compare(obj, r, o, clocks[r.ID])
		if err != nil {
			return err
		}
		if len(diffs) == 0 {
			continue
		}
		if err := s.repairFields(ctx, obj, pol, dry, r, o, diffs, asOf); err != nil {
			return err
		}
		for _, d := range diffs {
			rep.add(*d)
		}
	}
	return nil
}

// repairMissingLink resends a record HubSpot never accepted (no link,
// nothing queued), once: see KindMissingLink. A record upserted by an email
// that another record holds (HubSpot keeps it on that record's contact) is
// reported instead: its upsert would write over that contact.
func (s *Scanner) repairMissingLink(ctx context.Context, obj mapping.Object, pol Policy, dry bool, r records.Record, rep *Report) error {
	d := Difference{
		Kind: KindMissingLink, ObjectType: obj.ObjectType, RecordID: r.ID, Verdict: LocalNewer,
		Reason: "no HubSpot link and nothing queued for HubSpot: HubSpot never accepted the record", Repair: ToHubSpot,
	}
	// A record's state is resent once: when its write and a resend of
	// it are both dead letters (whatever the cause: a refusal, or an
	// outage that outlasted the retries), another resend would add a
	// dead letter at every run; the operator retries them once the
	// cause is fixed.
	failed, err := s.failedSince(ctx, obj.ObjectType, r.ID, r.UpdatedAt)
	if err != nil {
		return err
	}
	if failed >= 2 {
		d.Repair = ""
		d.Reason = fmt.Sprintf("no HubSpot link: the record's write and a resend of it are dead letters (%d since its last write); see why with hubsync dlq list, fix the cause, then hubsync dlq retry, or edit the record", failed)
		rep.add(d)
		return nil
	}
	if email, ok := r.Fields["email"].(string); ok {
		holder := rep.keptElsewhere[r.ID]
		if holder == "" {
			var err error
			if holder, err = s.cfg.Records.EmailHeldBy(ctx, obj.ObjectType, r.ID, email); err != nil {
				return fmt.Errorf("drift: %w", err)
			}
		}
		if holder != "" {
			d.Repair, d.Verdict = "", Ambiguous
			d.Reason = fmt.Sprintf("no HubSpot link, and HubSpot keeps its email %s on the contact of record %s (merged into it, or added there): a resend would write over that contact; delete this record or give it another email", email, holder)
			rep.add(d)
			return nil
		}
	}
	if err := s.resendWhole(ctx, obj, pol, dry, &d, r); err != nil {
		return err
	}
	rep.add(d)
	return nil
}
