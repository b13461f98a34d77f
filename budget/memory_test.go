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
	benchReserveMemory(b, Config{Limit: 1 << 30, DailyLimit: -1})
}

// BenchmarkReserveMemoryInZone is BenchmarkReserveMemory with a daily limit
// counted in the days of a zone other than UTC (the account's).
func BenchmarkReserveMemoryInZone(b *testing.B) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		b.Fatal(err)
	}
	benchReserveMemory(b, Config{Limit: 1 << 30, DailyLimit: 1 << 62, TimeZone: tokyo})
}

func benchReserveMemory(b *testing.B, cfg Config) {
	m, err := NewMemory(cfg)
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
