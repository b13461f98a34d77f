package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/server"
)

// driftSettings binds the drift flags and their environment variables into
// cfg (with the schedule's interval when withInterval); the returned function
// parses the policies and the share after Parse, naming the variable of a bad
// value.
func driftSettings(e *envFlags, cfg *server.DriftConfig, withInterval bool) func() error {
	prefix := "" // the drift command's own flags; serve's are drift-…
	if withInterval {
		prefix = "drift-"
		e.duration(&cfg.Interval, "drift-interval", "HUBSYNC_DRIFT_INTERVAL", 0, "run a drift scan with repairs this often, e.g. 6h; 0 turns the schedule off")
	}
	share := e.fs.String(prefix+"budget-share", envOr("HUBSYNC_DRIFT_BUDGET_SHARE", strconv.FormatFloat(budget.ShareDefault, 'f', -1, 64)),
		"share of the HubSpot budget window a drift scan may use, above 0 and at most 1 (HUBSYNC_DRIFT_BUDGET_SHARE)")
	e.int(&cfg.PageSize, prefix+"page-size", "HUBSYNC_DRIFT_PAGE_SIZE", drift.PageSizeDefault, fmt.Sprintf("records compared per HubSpot call, 1..%d", drift.PageSizeMax))
	e.int(&cfg.MaxDifferences, prefix+"max-differences", "HUBSYNC_DRIFT_MAX_DIFFERENCES", drift.MaxDifferencesDefault,
		fmt.Sprintf("the most differences a drift report lists, 1..%d; those past it are counted in its totals and repaired alike, only not listed", drift.MaxDifferencesMax))
	policy := e.fs.String(prefix+"policy", os.Getenv("HUBSYNC_DRIFT_POLICY"),
		"what to do with ambiguous differences (both sides changed): report (default), report_only (repair nothing), hubspot_wins, local_wins or newest_wins; "+
			"per object as contacts=hubspot_wins,deals=report_only; wins over the mapping file's drift_policy (HUBSYNC_DRIFT_POLICY)")
	return func() error {
		v, err := strconv.ParseFloat(strings.TrimSpace(*share), 64)
		if err == nil {
			_, err = budget.ShareLimit(budget.LimitDefault, v)
		}
		if err != nil {
			return fmt.Errorf("HUBSYNC_DRIFT_BUDGET_SHARE/-%sbudget-share %q: want a number above 0 and at most 1, e.g. 0.2", prefix, *share)
		}
		cfg.BudgetShare = v
		if p := strings.TrimSpace(*policy); p != "" {
			if !strings.Contains(p, "=") {
				pol, err := drift.ParsePolicy(p)
				if err != nil {
					return fmt.Errorf("HUBSYNC_DRIFT_POLICY/-%spolicy: %w", prefix, err)
				}
				cfg.Policy = pol
			} else {
				pols, err := drift.ParsePolicies(p)
				if err != nil {
					return fmt.Errorf("HUBSYNC_DRIFT_POLICY/-%spolicy: %w", prefix, err)
				}
				cfg.Policies = pols
			}
		}
		return nil
	}
}
