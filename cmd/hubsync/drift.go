package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/server"
)

func init() {
	register("drift", command{summary: "find and repair drift between the database and HubSpot; exits 1 while differences remain (for cron)", run: runDrift})
}

// errDriftRemains makes `hubsync drift` exit 1 when differences remain.
var errDriftRemains = errors.New("differences remain")

func runDrift(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("drift", stderr)
	e := &envFlags{fs: fs}
	dbURL := databaseURLFlag(fs)
	var apiBase, token, appID, mappingPath string
	var rateLimit, dailyLimit int
	e.string(&apiBase, "hubspot-api-base", "HUBSPOT_API_BASE", hubspot.BaseURLDefault, "HubSpot API base URL")
	e.secret(&token, "hubspot-access-token", "HUBSPOT_ACCESS_TOKEN", "private app access token")
	e.string(&appID, "hubspot-app-id", "HUBSPOT_APP_ID", "", "app id: a HubSpot value written by this app is hubsync's own write; without it local changes cannot be judged newer and read as ambiguous")
	e.string(&mappingPath, "mapping", "HUBSYNC_MAPPING", "", "YAML mapping file; empty: the default mapping")
	e.int(&rateLimit, "rate-limit", "HUBSYNC_HUBSPOT_RATE_LIMIT", server.RateLimitDefault, "HubSpot calls per 10 s shared by all replicas")
	e.int(&dailyLimit, "daily-limit", "HUBSYNC_HUBSPOT_DAILY_LIMIT", 0, "HubSpot calls per day (0: 250000; negative: none)")
	var timeZone string
	e.string(&timeZone, "time-zone", "HUBSYNC_HUBSPOT_TIME_ZONE", "", "the HubSpot account's time zone, at whose midnight the daily limit resets, e.g. America/New_York (empty: ask HubSpot)")
	var dc server.DriftConfig
	finish := driftSettings(e, &dc, false)
	dryRun := fs.Bool("dry-run", false, "report what would be repaired; enqueue nothing")
	objects := fs.String("object", "", "comma-separated object types to scan; empty: every mapped type")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	orphans := fs.Bool("orphans", true, "also list HubSpot's objects for orphans (one call per 100 objects); -orphans=false compares linked records only")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: hubsync drift [flags]

Compares every linked record's mapped fields with HubSpot (batch reads with
property history, through the shared budget at -budget-share of it), finds
records with no link and HubSpot objects no record is linked to (orphans),
and judges each difference by the local field clocks and HubSpot's history
timestamps. Repairs are enqueued, never written directly: local-newer values
become outbound events, HubSpot-newer ones inbound changes, which a running
`+"`hubsync serve`"+` applies. Ambiguous differences (both sides changed) are
reported unless -policy says which side wins. A scan keeps a cursor in the
database: stopped, the next run continues where it stopped. The report
counts every difference and lists the first -max-differences of them.

Exit status: 0 when no difference remains, 1 when some remain (ambiguous,
orphans, or any in -dry-run) or on error: run it from cron and alert on 1.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if len(e.errs) > 0 {
		return errors.Join(e.errs...)
	}
	if err := e.resolve(); err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	if dc.PageSize < 1 || dc.PageSize > drift.PageSizeMax {
		return fmt.Errorf("HUBSYNC_DRIFT_PAGE_SIZE/-page-size %d: use 1..%d", dc.PageSize, drift.PageSizeMax)
	}
	if dc.MaxDifferences < 0 || dc.MaxDifferences > drift.MaxDifferencesMax {
		return fmt.Errorf("HUBSYNC_DRIFT_MAX_DIFFERENCES/-max-differences %d: use 1..%d (the report counts every difference and lists this many), or 0 for %d", dc.MaxDifferences, drift.MaxDifferencesMax, drift.MaxDifferencesDefault)
	}
	if token == "" {
		return errors.New("HUBSPOT_ACCESS_TOKEN is empty; set it to your private app's access token")
	}
	m := mapping.Default()
	if mappingPath != "" {
		var err error
		if m, err = mapping.Load(mappingPath); err != nil {
			return fmt.Errorf("HUBSYNC_MAPPING/-mapping: %w", err)
		}
	}
	var types []string
	for t := range strings.SplitSeq(*objects, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if _, ok := m.Lookup(t); !ok {
			return fmt.Errorf("-object %q is not a mapped object type; use one of %s", t, strings.Join(m.ObjectTypes(), ", "))
		}
		types = append(types, t)
	}

	db, err := openMigrated(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	zone, err := server.AccountZone(ctx, timeZone, apiBase, token, log)
	if err != nil {
		return fmt.Errorf("HUBSYNC_HUBSPOT_TIME_ZONE/-time-zone: %w", err)
	}
	bcfg := budget.Config{Limit: rateLimit, DailyLimit: dailyLimit, TimeZone: zone, Now: db.Store.Now}
	shared, err := budget.NewSQL(db.SQL, db.Dialect, bcfg)
	if err != nil {
		return fmt.Errorf("HUBSYNC_HUBSPOT_RATE_LIMIT/HUBSYNC_HUBSPOT_DAILY_LIMIT: %w", err)
	}
	key := server.BudgetKeyDefault
	share, err := server.NewDriftShare(db, shared, bcfg, key, dc.BudgetShare)
	if err != nil {
		return fmt.Errorf("HUBSYNC_DRIFT_BUDGET_SHARE: %w", err)
	}
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: apiBase, AccessToken: token, TimeZone: zone, OnResponse: budget.ObserveHubSpot(shared, key, log)})
	if err != nil {
		return fmt.Errorf("HUBSPOT_API_BASE/HUBSPOT_ACCESS_TOKEN: %w", err)
	}
	recs, err := recordsService(db, m)
	if err != nil {
		return err
	}
	sc, err := drift.New(drift.Config{
		Store: db.Store, Records: recs, HubSpot: client, Budget: share, BudgetKey: key, Mapping: m,
		AppID: appID, PageSize: dc.PageSize, Policy: dc.Policy, Policies: dc.Policies, MaxDifferences: dc.MaxDifferences,
		Logger: log, SkipOrphans: !*orphans,
	})
	if err != nil {
		return err
	}
	rep, runErr := sc.Run(ctx, drift.Options{DryRun: *dryRun, ObjectTypes: types})
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else if err := rep.WriteText(stdout); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if rep.Remaining > 0 {
		return fmt.Errorf("%d difference(s) remain: %w", rep.Remaining, errDriftRemains)
	}
	return nil
}

// recordsService is the records service drift repairs go through.
func recordsService(db *hubsync.DB, m *mapping.Set) (*records.Service, error) {
	return records.New(db.Store, nil, records.Config{ObjectTypes: m.ObjectTypes(), Mapping: m})
}
