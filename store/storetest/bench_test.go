package storetest_test

import (
	"os"
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
