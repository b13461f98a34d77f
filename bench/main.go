// Command bench compares hubsync's outbound claim→complete with River's
// burn-down of no-op jobs on one PostgreSQL database, interleaved in rounds so
// that both see the same machine load.
//
//	cd bench && go run . [-n 50000] [-rounds 3]
//
// The database is HUBSYNC_TEST_POSTGRES_URL, or
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. The command creates
// two schemas of its own (one for hubsync, one for River), migrates them, and
// drops them when it ends.
//
// Each round runs, one after another:
//   - hubsync with 1 and 4 workers: n pending outbound events, one per record,
//     bulk-loaded and analyzed before the clock starts; each worker claims
//     batches of 100 and completes each batch at once, as
//     storetest.BenchmarkClaimComplete does;
//   - River v0.51.2 with 1,000 and 2,000 workers: n no-op jobs inserted before the
//     client starts, timed from Start to the last completion event, with the
//     fetch settings River's own burn-down benchmark uses.
//
// The last line is the median over rounds of each round's best hubsync rate,
// divided by the median of each round's best River rate:
//
//	ratio hubsync/river: N.NN
//
// With -alternatives it runs no River: each round runs hubsync's claim and then
// the claim designs of alternatives.go, ceilings measured before a redesign,
// on the same load.
//
// This module has its own go.mod so that hubsync itself never depends on River.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"
)

const postgresURLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var (
	hubsyncWorkers = []int{1, 4}
	riverWorkers   = []int{1_000, 2_000}
)

func main() {
	n := flag.Int("n", 50_000, "events (hubsync) and jobs (River) per run")
	rounds := flag.Int("rounds", 3, "rounds; each runs every hubsync and River variant once")
	alts := flag.Bool("alternatives", false, "instead of River, run the claim designs of alternatives.go beside the store's claim")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *n, *rounds, *alts); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, n, rounds int, alts bool) error {
	if n < 1 {
		return fmt.Errorf("-n must be at least 1, got %d", n)
	}
	if rounds < 1 {
		return fmt.Errorf("-rounds must be at least 1, got %d", rounds)
	}
	admin := os.Getenv("HUBSYNC_TEST_POSTGRES_URL")
	if admin == "" {
		admin = postgresURLDefault
	}
	suffix := strconv.FormatUint(rand.Uint64()%1e12, 36)

	hs, err := newHubsyncBench(ctx, admin, "hubsync_bench_"+suffix)
	if err != nil {
		return err
	}
	defer hs.close()
	if alts {
		fmt.Fprintf(out, "PostgreSQL %s, n=%d, rounds=%d\n", redact(admin), n, rounds)
		return runAlternatives(ctx, out, hs, n, rounds)
	}
	rb, err := newRiverBench(ctx, admin, "river_bench_"+suffix, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer rb.close()

	fmt.Fprintf(out, "PostgreSQL %s, n=%d, rounds=%d\n", redact(admin), n, rounds)
	var bestHubsync, bestRiver []float64
	for r := 1; r <= rounds; r++ {
		var hBest, rBest float64
		for _, w := range hubsyncWorkers {
			rate, err := hs.run(ctx, n, w)
			if err != nil {
				return fmt.Errorf("round %d: hubsync %d workers: %w", r, w, err)
			}
			fmt.Fprintf(out, "round %d: hubsync claim→complete, %d workers: %8.0f events/s\n", r, w, rate)
			hBest = max(hBest, rate)
		}
		for _, w := range riverWorkers {
			rate, err := rb.run(ctx, n, w)
			if err != nil {
				return fmt.Errorf("round %d: river %d workers: %w", r, w, err)
			}
			fmt.Fprintf(out, "round %d: river burn-down, %d workers: %8.0f jobs/s\n", r, w, rate)
			rBest = max(rBest, rate)
		}
		bestHubsync = append(bestHubsync, hBest)
		bestRiver = append(bestRiver, rBest)
	}
	h, rv := median(bestHubsync), median(bestRiver)
	fmt.Fprintf(out, "median of each round's best: hubsync %.0f events/s, river %.0f jobs/s\n", h, rv)
	fmt.Fprintf(out, "ratio hubsync/river: %.2f\n", h/rv)
	return nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// withSearchPath returns rawURL with its search_path set to schema, so that
// every connection of a pool opened on it sees that schema's tables.
func withSearchPath(rawURL, schema string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// elapsedSince is the time from start to end, at least a nanosecond so a rate
// is never infinite.
func elapsedSince(start, end time.Time) time.Duration {
	return max(end.Sub(start), time.Nanosecond)
}
