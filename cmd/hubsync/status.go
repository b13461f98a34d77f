package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

func init() {
	register("status", command{summary: "show queue depths, oldest pending ages, dead letters and budget use", run: runStatus})
}

// statusReport is what `hubsync status -json` prints.
type statusReport struct {
	ops.Metrics
	Budget []budgetStatus `json:"budget"`
}

// budgetStatus is one budget key's use: today's calls and any pause, and the
// calls counted in its rolling window now and booked ahead of it.
type budgetStatus struct {
	budget.Usage
	InWindow int64 `json:"in_window"`
	Booked   int64 `json:"booked_ahead"`
	// ShortAt is when the budget last had no room at once for a call of any
	// replica (budget.WindowUse.ShortAt); outbound workers hold their calls
	// for outbound.HoldFor after it.
	ShortAt *time.Time `json:"short_at,omitempty"`
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	dbURL := databaseURLFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync status [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	db, err := openMigrated(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := ops.LoadMetrics(ctx, db.Store)
	if err != nil {
		return err
	}
	b, err := budget.NewSQL(db.SQL, db.Dialect, budget.Config{Now: db.Store.Now})
	if err != nil {
		return err
	}
	bu, err := b.Usage(ctx)
	if err != nil {
		return err
	}
	rep := statusReport{Metrics: m, Budget: make([]budgetStatus, len(bu))}
	for i, u := range bu {
		w, err := b.WindowUse(ctx, u.Key)
		if err != nil {
			return err
		}
		rep.Budget[i] = budgetStatus{Usage: u, InWindow: w.Used, Booked: w.Booked, ShortAt: w.ShortAt}
	}
	if rep.Queues == nil {
		rep.Queues = []ops.QueueMetrics{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printStatus(stdout, rep)
	return nil
}

func printStatus(w io.Writer, rep statusReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tKEY\tPENDING\tPROCESSING\tPROCESSED\tFAILED\tOLDEST PENDING")
	if len(rep.Queues) == 0 {
		fmt.Fprintln(tw, "(no events)\t\t\t\t\t\t")
	}
	for _, q := range rep.Queues {
		key := q.Key
		if key == "" {
			key = "-"
		}
		age := "-"
		if q.OldestPending != nil {
			age = (time.Duration(q.OldestPendingAgeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", q.Direction, key,
			q.Counts[store.StatusPending], q.Counts[store.StatusProcessing], q.Counts[store.StatusProcessed], q.Counts[store.StatusFailed], age)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d pending, %d dead letters", rep.Pending, rep.DeadLetters)
	if rep.DeadLetters > 0 {
		fmt.Fprint(w, " (hubsync dlq list -direction inbound|outbound|internal)")
	}
	fmt.Fprintln(w)
	if len(rep.Budget) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BUDGET KEY\tIN WINDOW\tBOOKED AHEAD\tCALLS TODAY\tDAY ENDS\tTIME ZONE\tPAUSED UNTIL\tLAST SHORT")
		for _, b := range rep.Budget {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", b.Key, b.InWindow, b.Booked, b.CallsToday, instant(b.DayEnds), cmp.Or(b.TimeZone, "UTC"), instant(b.PausedUntil), instant(b.ShortAt))
		}
		tw.Flush()
	}
}

// instant formats t for the status table: RFC 3339, or "-" for nil.
func instant(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
