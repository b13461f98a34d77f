package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hubsync/hubsync/idempotency"
	"github.com/hubsync/hubsync/ops"
)

func init() {
	register("cleanup", command{summary: "delete processed events past their retention", run: runCleanup})
}

func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup", stderr)
	dbURL := databaseURLFlag(fs)
	e := &envFlags{fs: fs}
	var c ops.CleanupConfig
	e.duration(&c.OutboundRetention, "outbound-retention", "HUBSYNC_OUTBOUND_RETENTION", ops.OutboundRetentionDefault, "keep processed outbound events this long")
	e.duration(&c.InboundRetention, "inbound-retention", "HUBSYNC_INBOUND_RETENTION", ops.InboundRetentionDefault, "keep processed inbound events this long (audit)")
	e.duration(&c.InternalRetention, "internal-retention", "HUBSYNC_INTERNAL_RETENTION", ops.InternalRetentionDefault, "keep processed internal events this long")
	e.duration(&c.IdempotencyRetention, "idempotency-retention", "HUBSYNC_IDEMPOTENCY_RETENTION", idempotency.RetentionDefault, "honour API Idempotency-Keys this long")
	e.duration(&c.SubscriptionRetention, "subscription-retention", "HUBSYNC_SUBSCRIPTION_RETENTION", ops.SubscriptionRetentionDefault, "keep synced or superseded subscription requests this long after their last change (a contact's newest is kept always)")
	e.duration(&c.DiscardedRetention, "discarded-retention", "HUBSYNC_DISCARDED_RETENTION", ops.DiscardedRetentionDefault, "keep discarded dead letters, with their reason, this long")
	fs.IntVar(&c.BatchSize, "batch-size", 1000, "rows deleted per statement")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync cleanup [flags]\n\nDeletes processed events older than each queue's retention; pending,\nprocessing and failed events are never touched. Also deletes, each past\nits retention, refused webhook events, expired Idempotency-Keys, synced or\nsuperseded subscription requests but each contact's newest (a retry under\na deleted request's Idempotency-Key is a new request), and discarded dead\nletters.")
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
	if c.BatchSize < 1 {
		return fmt.Errorf("-batch-size %d: use a positive number", c.BatchSize)
	}
	db, err := openMigrated(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := ops.Cleanup(ctx, db.Store, c)
	fmt.Fprintf(stdout, "deleted processed events: inbound %d, outbound %d, internal %d; refused webhook events %d; expired Idempotency-Keys %d; settled subscription requests %d; discarded dead letters %d\n",
		res.Inbound, res.Outbound, res.Internal, res.Rejected, res.IdempotencyKeys, res.SubscriptionRequests, res.Discarded)
	return namingSettings(err)
}
