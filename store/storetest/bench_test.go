package storetest_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// LargeBacklogEnv enables the 1,000,000-row claim latency benchmark.
const largeBacklogEnv = "HUBSYNC_BENCH_LARGE"

func newBenchStore(d store.Dialect) storetest.BenchStoreFunc {
	return func(b *testing.B, cfg store.Config) store.Store {
		return open(b, d, dbtest.Migrated(b, d).DB, cfg)
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			storetest.BenchmarkClaimComplete(b, newBenchStore(d))
		})
	}
}

func BenchmarkClaimLatencyPostgres(b *testing.B) {
	b.Run("10k", func(b *testing.B) {
		storetest.BenchmarkClaimLatency(b, newBenchStore(store.Postgres), 10_000)
	})
	b.Run("1M", func(b *testing.B) {
		if os.Getenv(largeBacklogEnv) == "" {
			b.Skipf("set %s=1 to bulk-load 1,000,000 rows", largeBacklogEnv)
		}
		storetest.BenchmarkClaimLatency(b, newBenchStore(store.Postgres), 1_000_000)
	})
}

// BenchmarkHotClaim runs storetest.BenchmarkHotClaim per dialect: 50,000 events
// over 300 hot records and one per record, with 1, 4 and 9 claimers, handing out
// followers (the default) and heads only (MaxPerRecord 1).
func BenchmarkHotClaim(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			for _, shape := range []struct {
				name            string
				records, perRec int
			}{
				{"records=300", 300, 0},
				{"records=300/perRecord=1", 300, 1},
				{"records=50000", 50_000, 0},
			} {
				for _, workers := range []int{1, 4, 9} {
					b.Run(shape.name+"/workers="+strconv.Itoa(workers), func(b *testing.B) {
						storetest.BenchmarkHotClaim(b, newBenchStore(d), storetest.HotClaimConfig{
							Events: 50_000, Records: shape.records, Workers: workers, MaxPerRecord: shape.perRec})
					})
				}
			}
		})
	}
}
