package modeltest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

// The known gaps: scenarios the model test found failing. The numbered ones
// are items of issue 11. A fixed gap keeps its constant, so that
// -model.gaps=N can still leave its scenario out while a regression is
// investigated, but is no longer in modelKnownGaps.
const (
	// gapOrder (item 1, fixed): a record's outbound events were ordered by
	// the enqueueing replica's clock, so two replicas' writes within their
	// skew went out in the wrong order (v3 before v2, or v2 treated as latest).
	gapOrder = 1
	// gapLocalDelete (item 3, fixed): a HubSpot change in flight when the
	// record is deleted locally brought it back; and a merge into an object
	// whose record was deleted here re-pointed the merged record to the
	// object the delete archives.
	gapLocalDelete = 3
	// gapMergeMoves (item 8, fixed): a merge that moves mapped properties into
	// the survivor; the moved values never reached the local record.
	gapMergeMoves = 8
	// gapTwoSided (no item of issue 11; fixed for edits): one record changed
	// on both sides within the sync latency. A local change pushed before a
	// HubSpot user's later edit of the same field is applied here overwrote
	// HubSpot's newer value, while HubSpot's webhook won locally. Now the
	// inbound side sends the applied value back when a write of ours may
	// have overwritten it (apply.Resender, in records). Its deletions and merges
	// are gapTwoSidedGone.
	gapTwoSided = 100
	// gapCrashAfterWrite (no item of issue 11; found by hubsync chaos; fixed):
	// an outbound cycle that dies after HubSpot applied its write and before
	// it recorded the push. The retry was planned against the last recorded
	// push: a value equal to it was skipped though HubSpot held the newer
	// unrecorded one, and a retried create (an upsert of the present fields)
	// did not clear a field removed since.
	gapCrashAfterWrite = 101
	// gapUnlinkedEdit (found with gapCrashAfterWrite enabled; fixed): a
	// HubSpot edit of an object whose create reached HubSpot while its answer
	// was lost (so no link is recorded yet), applied before the retry links
	// it. The inbound worker read the object without its id property
	// (hubsync_record_id is no mapped field), found no match, and created a
	// second local record; the retry then met a link conflict and was
	// dead-lettered. The value conflict that remains (the retried create
	// overwrites the edit) is gapTwoSided's.
	gapUnlinkedEdit = 102
	// gapTwoSidedGone (gapTwoSided's deletions and merges; fixed): a HubSpot
	// deletion or merge while a local change waits to be pushed, or a local
	// edit while HubSpot's deletion is in flight. A record made of a HubSpot
	// object, edited here, was upserted by email after a merge deleted it and
	// wrote over the survivor; the outbound worker now asks the records
	// service whether HubSpot's change deleted it (SourceDeletedRecords).
	gapTwoSidedGone = 103
	// gapUnrecordedGone (fixed, but for gapUnrecordedSiblings): a HubSpot
	// deletion or merge of an object whose create reached HubSpot while its
	// answer was lost (no link recorded yet). A merge applied before the
	// retry finds the record by the survivor's additional emails (apply
	// TestMergeAwayOfAnUnlinkedObject; seed 216); a retry run first
	// dead-letters as a link conflict, writes the survivor's record over
	// what it left, and the merge then finds the dead-lettered record the
	// same way (outbound TestMergeAwayBeforeCreateRetry; seed 4944); a merge
	// into such a contact matches it by email (apply
	// TestMergeIntoAnUnlinkedSurvivor), and so does a chain of merges of
	// unrecorded contacts (records TestMergeChainOfUnrecordedCreates). Two
	// such contacts merged into each other and retried in one batch: the
	// retry links first the record whose email the survivor held (outbound
	// TestMergedLostCreatesRetriedTogether; seed 3158). A deletion applied
	// before the retry reads the deleted object and takes the record when
	// no write of it was in a worker's hands since (outbound
	// TestHubSpotDeleteOfAnUnrecordedCreate); otherwise the record stays and
	// the retry makes the object again, consistent on both sides
	// (TestHubSpotDeleteBetweenLostAttempts; seed 2267). A company merged
	// away is not found (nothing on the survivor names its record): the
	// record stays and its retry makes the company again.
	gapUnrecordedGone = 104
	// gapUnrecordedSiblings (open): a second object whose create's answer
	// was lost merged into a survivor that already took one (seed 6547 of
	// 8000 with -model.gaps=none: three such contacts, two merged into the
	// third, both merges applied before the retry). Each merge has one
	// unlinked merged id and finds two records by the survivor's emails,
	// so neither takes one: it cannot tell the sibling merge that took no
	// record from one that took its own. The retries then dead-letter as
	// link conflicts, and the records stay with no HubSpot object.
	gapUnrecordedSiblings = 105
)

// modelKnownGaps lists the gaps the generator avoids, so that the default
// run passes on this branch. Remove an item once its fix is merged, or run
// with -model.gaps=none to see what still fails.
var modelKnownGaps = []int{gapUnrecordedSiblings}

var (
	seedsFlag = flag.Int("seeds", 0, "model test: number of seeds to run (default 200, or $HUBSYNC_MODEL_SEEDS)")
	seedFlag  = flag.Uint64("seed", 0, "model test: run only this seed")
	firstFlag = flag.Uint64("first-seed", 1, "model test: the first of the -seeds seeds (to explore seeds past those run before)")
	stepsFlag = flag.Int("steps", stepsDefault, "model test: steps per seed")
	gapsFlag  = flag.String("model.gaps", "", `model test: comma-separated known-gap items to avoid, or "none"; default modelKnownGaps`)
)

const (
	seedsDefault         = 200
	seedsPostgresDefault = 20
	stepsDefault         = 40
	replicasDefault      = 3
)

func seeds(def int) int {
	if *seedsFlag > 0 {
		return *seedsFlag
	}
	if n, err := strconv.Atoi(os.Getenv("HUBSYNC_MODEL_SEEDS")); err == nil && n > 0 {
		return n
	}
	return def
}

func gaps(t *testing.T) map[int]bool {
	out := map[int]bool{}
	switch *gapsFlag {
	case "":
		for _, g := range modelKnownGaps {
			out[g] = true
		}
	case "none":
	default:
		for _, s := range strings.Split(*gapsFlag, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("-model.gaps: %q is not an item number", s)
			}
			out[n] = true
		}
	}
	return out
}

// TestModel runs the model on SQLite for many seeds.
func TestModel(t *testing.T) {
	runModel(t, store.SQLite, seeds(seedsDefault))
}

// TestModelPostgres runs fewer seeds on PostgreSQL (skipped when it is not
// reachable, unless CI is set).
func TestModelPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	runModel(t, store.Postgres, max(seeds(seedsDefault)/10, seedsPostgresDefault))
}

func runModel(t *testing.T, d store.Dialect, n int) {
	g := gaps(t)
	list := make([]uint64, 0, n)
	if *seedFlag != 0 {
		list = append(list, *seedFlag)
	} else {
		for i := range n {
			list = append(list, *firstFlag+uint64(i))
		}
	}
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			steps := generate(seed, *stepsFlag, replicasDefault, g)
			bad := runSeed(t, d, seed, steps, g, debugLog(false))
			if len(bad) == 0 {
				return
			}
			short := shrink(t, d, seed, steps, g)
			if os.Getenv("HUBSYNC_MODEL_LOG") == "short" {
				t.Run("replay", func(t *testing.T) {
					fmt.Fprintf(os.Stderr, "=== seed %d: replay of the shortest trace\n", seed)
					fmt.Fprintf(os.Stderr, "=== seed %d: replay found %q\n", seed, runSeed(t, d, seed, short, g, debugLog(true)))
				})
			}
			t.Errorf("seed %d fails (%d violations):\n  %s\nshortest trace found (%d of %d steps), reproduce with -run 'TestModel/seed=%d$' -seed %d:\n%s",
				seed, len(bad), strings.Join(bad, "\n  "), len(short), len(steps), seed, seed, trace(short))
		})
	}
}

// skews gives each replica its clock offset from HubSpot, from the seed.
func skews(seed uint64, n int) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x736b6577))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(rng.Int64N(int64(2*maxSkew))) - maxSkew
	}
	return out
}

// runSeed runs steps in a fresh world and returns the violations found after
// quiescence.
func runSeed(t *testing.T, d store.Dialect, seed uint64, steps []step, g map[int]bool, log *slog.Logger) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newWorld(ctx, t, d, replicasDefault, skews(seed, replicasDefault), log)
	w.gaps = g
	if err := w.run(steps); err != nil {
		t.Fatal(err)
	}
	if err := w.quiesce(); err != nil {
		return []string{err.Error()}
	}
	return w.check()
}

// shrink removes chunks of steps while the run still fails (simple delta
// debugging) and returns the shortest failing trace it found.
func shrink(t *testing.T, d store.Dialect, seed uint64, steps []step, g map[int]bool) []step {
	attempts := 0
	fails := func(s []step) bool {
		attempts++
		var bad []string
		t.Run(fmt.Sprintf("shrink-%d", attempts), func(t *testing.T) {
			bad = runSeed(t, d, seed, s, g, debugLog(false))
		})
		return len(bad) > 0
	}
	cur := steps
	for chunk := len(cur) / 2; chunk >= 1 && attempts < 300; chunk /= 2 {
		for i := 0; i < len(cur) && attempts < 300; {
			cand := append(append([]step{}, cur[:i]...), cur[min(len(cur), i+chunk):]...)
			if fails(cand) {
				cur = cand
				continue
			}
			i += chunk
		}
	}
	return cur
}
