package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hubsync/hubsync/store/storetest"
)

// An alternative is a claim design measured beside the store's own claim on
// the same schema and workload (-alternatives). None of them is the product:
// each keeps only what the no-op burn-down exercises (distinct records, one
// event each, no failures, no expired leases), so its figure is a ceiling for
// a design of its kind, not a claim that the design keeps hubsync's
// guarantees. They answer one question before a redesign: which per-event
// writes does the claim→complete rate pay for?
type alternative struct {
	name string
	// setup is run once per run, after the load, one statement at a time;
	// teardown after the run, whatever its outcome.
	setup, teardown []string
	// claim returns the claimed events' Id, Attempt, ObjectType and RecordID;
	// its parameters are the key, now, the limit and the lease's expiry.
	claim string
	// complete takes a JSON array of {"id","attempt"} and one of lane keys,
	// and now.
	complete string
	// pending reports whether completed events stay pending (the floor
	// alternative leaves them untouched).
	pending bool
}

// altLanes is the part every alternative shares: take up to the limit of the
// key's due lanes that no claim holds, in due order, skipping locked ones,
// and move them out of the due range until the lease expires.
const altLanes = `l AS (
  SELECT n.LaneKey FROM hubsync_lane_outbound n
  WHERE n.Destination = $1 AND NOT n.Claimed AND n.DueDate <= $2
  ORDER BY n.Destination, n.DueDate, n.HeadId LIMIT $3 FOR UPDATE SKIP LOCKED
), k AS (
  UPDATE hubsync_lane_outbound n SET DueDate = $4, Leased = true, Claimed = true
  FROM l WHERE n.LaneKey = l.LaneKey RETURNING n.Destination, n.ObjectType, n.RecordID
), e AS (
  SELECT s.* FROM k CROSS JOIN LATERAL (
    SELECT f.* FROM _System_IntegrationOutbound f
    WHERE f.Destination = k.Destination AND f.ObjectType = k.ObjectType AND f.RecordID = k.RecordID
      AND f.Status IN ('pending', 'processing')
    ORDER BY f.Lane LIMIT 100) s
)`

// altEventLease is a claim function that leases the lanes as altLanes does
// and writes each claimed event with set, as the store's claim does, but
// without its walk, row locks and lease probes.
func altEventLease(name, set string) string {
	return `CREATE OR REPLACE FUNCTION ` + name + `(p_key text, p_now timestamptz, p_limit int, p_exp timestamptz)
RETURNS SETOF _System_IntegrationOutbound LANGUAGE sql
SET hubsync.lanes_kept = 'on' SET plan_cache_mode = 'force_generic_plan' SET enable_seqscan = off
SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
WITH ` + strings.NewReplacer("$1", "p_key", "$2", "p_now", "$3", "p_limit", "$4", "p_exp").Replace(altLanes) + `
UPDATE _System_IntegrationOutbound t SET ` + set + `
FROM e WHERE t.Id = e.Id RETURNING t.*
$$`
}

const (
	altCompleteFrom = ` FROM jsonb_to_recordset($1::jsonb) AS l(id text, attempt int)
WHERE t.Id = l.id AND t.Attempt = l.attempt AND $2::text[] IS NOT NULL AND `
	altSelect = `SELECT Id, Attempt, ObjectType, RecordID FROM `
)

var alternatives = []alternative{{
	// The lease lives on the lane alone: the claim writes one lane per
	// record and no event; the complete writes each event once (processed),
	// and its lane trigger deletes the lane.
	name:     "lease on the lane",
	claim:    `WITH ` + altLanes + ` SELECT e.Id, e.Attempt, e.ObjectType, e.RecordID FROM e`,
	complete: `UPDATE _System_IntegrationOutbound AS t SET Status = 'processed', ProcessedDate = $3, LastModifiedDate = $3` + altCompleteFrom + `t.Status = 'pending'`,
}, {
	// The same, with the event deleted on completion instead of kept as
	// processed (no history).
	name:     "lease on the lane, delete on complete",
	claim:    `WITH ` + altLanes + ` SELECT e.Id, e.Attempt, e.ObjectType, e.RecordID FROM e`,
	complete: `DELETE FROM _System_IntegrationOutbound AS t USING jsonb_to_recordset($1::jsonb) AS l(id text, attempt int) WHERE t.Id = l.id AND $2::text[] IS NOT NULL AND $3::timestamptz IS NOT NULL AND t.Status = 'pending'`,
}, {
	// The store's writes without its reads: lanes as above, then every
	// claimed event leased as the store's claim leases it (Status, lease,
	// Attempt), and the store's complete.
	name:     "lease on the lane and the event",
	setup:    []string{altEventLease("alt_claim_event", `Status = 'processing', LeaseOwner = 'bench', LeaseExpiresDate = p_exp, Attempt = t.Attempt + 1, LastModifiedDate = p_now`)},
	claim:    altSelect + `alt_claim_event($1, $2, $3, $4)`,
	complete: `UPDATE _System_IntegrationOutbound AS t SET Status = 'processed', ProcessedDate = $3, LeaseExpiresDate = NULL, LastModifiedDate = $3` + altCompleteFrom + `t.Status = 'processing'`,
}, {
	// The floor of any design that marks each claimed record: one lane
	// write per claimed record and its delete on completion; events are
	// never written (their status would have to be kept elsewhere).
	name:     "lane only (floor)",
	claim:    `WITH ` + altLanes + ` SELECT e.Id, e.Attempt, e.ObjectType, e.RecordID FROM e`,
	complete: `DELETE FROM hubsync_lane_outbound WHERE LaneKey = ANY($2) AND $1::jsonb IS NOT NULL AND $3::timestamptz IS NOT NULL`,
	pending:  true,
}, {
	// No lease per record: records are hashed into altPartitions
	// partitions, and a claim leases one partition (one row written) and
	// reads its pending events in Lane order by index; the complete marks
	// each event processed and frees the partition. No lane is written
	// (the lane triggers are off for the run). A slow or failing record
	// would hold its whole partition: the ceiling of a design that gives up
	// per-record leases for a write per batch.
	name:     "lease on a partition",
	setup:    altPartitionSetup,
	teardown: altPartitionTeardown,
	claim:    altPartitionClaim,
	complete: `WITH ` + altPartitionFree + ` UPDATE _System_IntegrationOutbound AS t SET Status = 'processed', ProcessedDate = $3, LastModifiedDate = $3
FROM jsonb_to_recordset($1::jsonb) AS l(id text, attempt int) WHERE t.Id = l.id AND $2::text[] IS NOT NULL AND t.Status = 'pending'`,
}, {
	// The same, with the event deleted on completion (no history): the
	// floor of a partitioned design.
	name:     "lease on a partition, delete on complete",
	setup:    altPartitionSetup,
	teardown: altPartitionTeardown,
	claim:    altPartitionClaim,
	complete: `WITH ` + altPartitionFree + ` DELETE FROM _System_IntegrationOutbound AS t USING jsonb_to_recordset($1::jsonb) AS l(id text, attempt int) WHERE t.Id = l.id AND $2::text[] IS NOT NULL AND $3::timestamptz IS NOT NULL AND t.Status = 'pending'`,
}}

// altPartitions is the number of partitions of the partition alternatives:
// four times the most workers the comparison runs.
const altPartitions = "16"

var (
	altPartitionSetup = []string{
		`CREATE TABLE IF NOT EXISTS alt_partition (p int PRIMARY KEY, leased_until timestamptz NOT NULL)`,
		`TRUNCATE alt_partition`,
		`INSERT INTO alt_partition SELECT g, '-infinity' FROM generate_series(0, ` + altPartitions + ` - 1) g`,
		`CREATE INDEX alt_partition_pending ON _System_IntegrationOutbound (Destination, (abs(hashtext(RecordID)) % ` + altPartitions + `), Lane) WHERE Status = 'pending'`,
		`ALTER TABLE _System_IntegrationOutbound DISABLE TRIGGER hubsync_lane_outbound_upd`,
		`ALTER TABLE _System_IntegrationOutbound DISABLE TRIGGER hubsync_lane_outbound_del`,
		`ANALYZE _System_IntegrationOutbound`,
		altPartitionFunc,
	}
	altPartitionTeardown = []string{
		`ALTER TABLE _System_IntegrationOutbound ENABLE TRIGGER hubsync_lane_outbound_upd`,
		`ALTER TABLE _System_IntegrationOutbound ENABLE TRIGGER hubsync_lane_outbound_del`,
		`DROP INDEX IF EXISTS alt_partition_pending`,
	}
	// altPartitionClaim leases the partition free longest (skipping locked
	// ones) and returns up to the limit of its pending events; the partition
	// travels to the complete as the events' Attempt. It is a PL/pgSQL
	// function (created by altPartitionSetup), whose second statement reads
	// the events in a snapshot taken after the partition's lock: in one
	// statement, a claim that locked a partition just freed would read, in
	// its older snapshot, the events whose completion freed it.
	altPartitionClaim = `SELECT o_id, o_p, o_type, o_rec FROM alt_partition_claim($1, $2, $3, $4)`
	altPartitionFunc  = `CREATE OR REPLACE FUNCTION alt_partition_claim(p_key text, p_now timestamptz, p_limit int, p_exp timestamptz)
RETURNS TABLE (o_id varchar, o_p int, o_type varchar, o_rec varchar) LANGUAGE plpgsql AS $$
DECLARE part int;
BEGIN
  UPDATE alt_partition a SET leased_until = p_exp
  WHERE a.p = (SELECT b.p FROM alt_partition b WHERE b.leased_until <= p_now
               ORDER BY b.leased_until, b.p LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING a.p INTO part;
  IF part IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT f.Id, part, f.ObjectType, f.RecordID FROM _System_IntegrationOutbound f
    WHERE f.Destination = p_key AND abs(hashtext(f.RecordID)) % ` + altPartitions + ` = part AND f.Status = 'pending'
    ORDER BY f.Lane LIMIT p_limit;
END $$`
	// altPartitionFree frees the partitions of the completed events.
	altPartitionFree = `r AS (
  UPDATE alt_partition SET leased_until = '-infinity'
  WHERE p IN (SELECT DISTINCT l.attempt FROM jsonb_to_recordset($1::jsonb) AS l(id text, attempt int))
)`
)

// runAlternatives runs, per round and worker count, the store's claim and
// then every alternative, each on a fresh load of n events.
func runAlternatives(ctx context.Context, out io.Writer, hs *hubsyncBench, n, rounds int) error {
	for r := 1; r <= rounds; r++ {
		for _, w := range hubsyncWorkers {
			rate, err := hs.run(ctx, n, w)
			if err != nil {
				return fmt.Errorf("round %d: hubsync %d workers: %w", r, w, err)
			}
			fmt.Fprintf(out, "round %d: hubsync claim→complete, %d workers: %8.0f events/s\n", r, w, rate)
			for _, a := range alternatives {
				rate, err := hs.runAlternative(ctx, a, n, w)
				if err != nil {
					return fmt.Errorf("round %d: alternative %q, %d workers: %w", r, a.name, w, err)
				}
				fmt.Fprintf(out, "round %d: alternative %s, %d workers: %8.0f events/s\n", r, a.name, w, rate)
			}
		}
	}
	return nil
}

// runAlternative loads n pending events as run does and times workers
// goroutines claiming batches with a's claim and completing each at once.
func (b *hubsyncBench) runAlternative(ctx context.Context, a alternative, n, workers int) (_ float64, rerr error) {
	db := b.db.SQL
	if err := b.load(ctx, n); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, "ANALYZE hubsync_lane_outbound"); err != nil {
		return 0, fmt.Errorf("analyze lanes: %w", err)
	}
	defer func() {
		for _, q := range a.teardown {
			if _, err := db.ExecContext(context.WithoutCancel(ctx), q); err != nil && rerr == nil {
				rerr = fmt.Errorf("teardown: %w", err)
			}
		}
	}()
	for _, q := range a.setup {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("setup: %w", err)
		}
	}
	elapsed, err := burnDown(n, workers, func(int) (int, error) { return altCycle(ctx, db, a) })
	if err != nil {
		return 0, err
	}
	// Every event was completed exactly once: none is left as it was loaded.
	var left int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM _System_IntegrationOutbound WHERE Status = 'pending'").Scan(&left); err != nil {
		return 0, err
	}
	if want := map[bool]int{false: 0, true: n}[a.pending]; left != want {
		return 0, fmt.Errorf("%d events pending after the run, want %d", left, want)
	}
	return float64(n) / elapsed.Seconds(), nil
}

// altCycle claims one batch with a and completes it, returning its size.
func altCycle(ctx context.Context, db *sql.DB, a alternative) (int, error) {
	now := time.Now()
	rows, err := db.QueryContext(ctx, a.claim, destination, now, storetest.BenchBatchSize, now.Add(time.Hour))
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	var leases, lanes []string
	for rows.Next() {
		var (
			id, objectType, recordID string
			attempt                  int
		)
		if err := rows.Scan(&id, &attempt, &objectType, &recordID); err != nil {
			rows.Close()
			return 0, fmt.Errorf("claim: %w", err)
		}
		leases = append(leases, fmt.Sprintf(`{"id":%q,"attempt":%d}`, id, attempt))
		lanes = append(lanes, fmt.Sprintf("%d:%d:%s%s%s", len(destination), len(objectType), destination, objectType, recordID))
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	if len(leases) == 0 {
		return 0, nil
	}
	res, err := db.ExecContext(ctx, a.complete, "["+strings.Join(leases, ",")+"]", lanes, time.Now())
	if err != nil {
		return 0, fmt.Errorf("complete: %w", err)
	}
	if got, err := res.RowsAffected(); err != nil || got != int64(len(leases)) {
		return 0, fmt.Errorf("complete: %d of %d claimed events done (%v)", got, len(leases), err)
	}
	return len(leases), nil
}
