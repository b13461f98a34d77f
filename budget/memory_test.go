package budget

import (
	"context"
	"testing"
	"time"
)

func TestMemory(t *testing.T) {
	exercise(t, func(t *testing.T, cfg Config) (Budget, Budget) {
		m, err := NewMemory(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, m
	}, 400)
}

func BenchmarkReserveMemory(b *testing.B) {
	m, err := NewMemory(Config{Limit: 1 << 30, DailyLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		if _, err := m.Reserve(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reservations/s")
}
