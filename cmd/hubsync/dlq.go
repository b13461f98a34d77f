package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

func init() {
	register("dlq", command{summary: "list, re-queue or discard dead letters (dlq list|retry|discard)", run: runDLQ})
}

// idList is a repeatable, comma-separated -id flag.
type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }
func (l *idList) Set(s string) error {
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	return nil
}

func runDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprintln(stderr, "usage: hubsync dlq list  [-direction D] [-key K] [-limit N] [-after ID] [-json]\n       hubsync dlq retry [-direction D] (-id ID[,ID...] | -key K -all)\n       hubsync dlq discard [-direction D] -id ID[,ID...] -reason TEXT")
	}
	if len(args) == 0 || (args[0] != "list" && args[0] != "retry" && args[0] != "discard") {
		usage()
		return errUsage
	}
	action := args[0]
	fs := newFlagSet("dlq "+action, stderr)
	dbURL := databaseURLFlag(fs)
	direction := fs.String("direction", "outbound", "queue: inbound, outbound or internal")
	key := fs.String("key", "", "exact source (inbound) or destination (outbound), e.g. hubspot")
	var ids idList
	limit, after, asJSON, all, reason := new(int), new(string), new(bool), new(bool), new(string)
	switch action {
	case "list":
		limit = fs.Int("limit", ops.DeadLetterLimitDefault, "most dead letters to list")
		after = fs.String("after", "", "list ids after this one (paging)")
		asJSON = fs.Bool("json", false, "print JSON")
	case "discard":
		fs.Var(&ids, "id", "dead letter id to discard (repeatable, or comma-separated)")
		reason = fs.String("reason", "", "why they are discarded; kept with each event (required)")
	default:
		fs.Var(&ids, "id", "dead letter id to re-queue (repeatable, or comma-separated)")
		all = fs.Bool("all", false, "re-queue every dead letter of -key")
	}
	fs.Usage = func() {
		usage()
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	dir, err := ops.ParseDirection(*direction)
	if err != nil {
		// ops words it for the admin API ("bad request: …"); here it is a flag.
		return fmt.Errorf("-direction: %s", strings.TrimPrefix(err.Error(), ops.ErrBadRequest.Error()+": "))
	}
	db, err := openMigrated(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()

	// Which ids the action will leave alone, and why, said before it runs
	// (afterwards a discarded or re-queued id no longer looks like one).
	// Best effort: ids the action refuses (bad text) get its own error.
	var skipped []string
	if (action == "discard" || action == "retry") && len(ids) > 0 && len(ids) <= ops.DiscardIDsMax {
		skipped, _ = ops.NotDeadLetters(ctx, db.Store, dir, ids)
	}
	if action == "discard" {
		res, err := ops.DiscardDeadLetters(ctx, db.Store, ops.DiscardRequest{Direction: dir, IDs: ids, Reason: *reason})
		if err != nil {
			return fmt.Errorf("-id/-reason: %w", err)
		}
		fmt.Fprintf(stdout, "discarded %d %s dead letters\n", res.Discarded, dir)
		if res.Discarded == 0 {
			return noneMatched(ids, skipped, dir)
		}
		printSkipped(stderr, skipped, dir)
		return nil
	}
	if action == "retry" {
		res, err := ops.RetryDeadLetters(ctx, db.Store, ops.RetryRequest{Direction: dir, IDs: ids, Key: *key, All: *all})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "re-queued %d %s dead letters\n", res.Requeued, dir)
		if res.Requeued == 0 {
			return noneMatched(ids, skipped, dir)
		}
		printSkipped(stderr, skipped, dir)
		return nil
	}
	dls, err := ops.ListDeadLetters(ctx, db.Store, ops.DeadLetterQuery{Direction: dir, Key: *key, Limit: *limit, After: *after})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(dls)
	}
	printDeadLetters(stdout, dir, dls)
	return nil
}

// noneMatched fails a retry or discard by id that found none of its ids
// among dir's dead letters: most often ids of another direction's queue
// (-direction defaults to outbound), which would otherwise exit 0 having
// done nothing. skipped says where each is (ops.NotDeadLetters).
func noneMatched(ids, skipped []string, dir store.Direction) error {
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("none of the %d ids is a dead letter of the %s queue; list those with hubsync dlq list -direction %s, or give the -direction (inbound, outbound, internal) the ids belong to:\n%s", len(ids), dir, dir, indentList(skipped))
}

// printSkipped says which ids a retry or discard that did act on some left
// alone, and why.
func printSkipped(w io.Writer, skipped []string, dir store.Direction) {
	if len(skipped) > 0 {
		fmt.Fprintf(w, "left alone, not dead letters of the %s queue:\n%s\n", dir, indentList(skipped))
	}
}

// indentList is up to 20 lines, indented, and how many more there are.
func indentList(lines []string) string {
	var out []string
	for _, l := range lines[:min(len(lines), 20)] {
		out = append(out, "  "+l)
	}
	if len(lines) > 20 {
		out = append(out, fmt.Sprintf("  (and %d more)", len(lines)-20))
	}
	return strings.Join(out, "\n")
}

func printDeadLetters(w io.Writer, dir store.Direction, dls []ops.DeadLetter) {
	if len(dls) == 0 {
		fmt.Fprintf(w, "no %s dead letters\n", dir)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tOBJECT\tRECORD\tEVENT\tRETRIES\tFAILED AT\tERROR")
	for _, d := range dls {
		msg := strings.ReplaceAll(d.ErrorMessage, "\n", " ")
		if len(msg) > 120 {
			msg = msg[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Key, d.ObjectType, d.RecordID, d.EventType, d.RetryCount, d.LastModifiedDate.Format(time.RFC3339), msg)
	}
	tw.Flush()
	if len(dls) > 0 {
		fmt.Fprintf(w, "\nre-queue with: hubsync dlq retry -direction %s -id %s   (or -key K -all)\n", dir, dls[0].ID)
	}
}
