package budget

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func TestCountsRoundTrip(t *testing.T) {
	for _, counts := range [][]int64{
		{0, 0, 0},
		{1, 0, 3},
		{7, 0, 0, 0, 2, 9},
	} {
		text := encodeCounts(counts)
		got, err := decodeCounts(text)
		if err != nil {
			t.Fatalf("decode(%q): %v", text, err)
		}
		// Leading zero buckets are not stored.
		trimmed := counts
		for len(trimmed) > 0 && trimmed[0] == 0 {
			trimmed = trimmed[1:]
		}
		if !slices.Equal(got, trimmed) {
			t.Fatalf("decode(encode(%v)) = %v (text %q)", counts, got, text)
		}
	}
	for _, bad := range []string{"x", "1", "1:", ":1", "-1:2", "1:-2", "70000:1", "0:1,,"} {
		if _, err := decodeCounts(bad); err == nil {
			t.Errorf("decode(%q) succeeded; want an error", bad)
		}
	}
}

func FuzzDecodeCounts(f *testing.F) {
	f.Add("0:3,17:5")
	f.Add("")
	f.Add("100:1,0:0")
	f.Fuzz(func(t *testing.T, text string) {
		counts, err := decodeCounts(text)
		if err != nil {
			return
		}
		again, err := decodeCounts(encodeCounts(counts))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		var sum1, sum2 int64
		for _, c := range counts {
			sum1 += c
		}
		for _, c := range again {
			sum2 += c
		}
		if sum1 != sum2 {
			t.Fatalf("sum changed: %d -> %d", sum1, sum2)
		}
	})
}

func TestClockRunningBackwardsIsClamped(t *testing.T) {
	l := newLimits(10, time.Second, -1)
	var s state
	now := clockStart.UnixMicro()
	if r := s.reserve(l, now, 10); !r.Granted {
		t.Fatal("first reserve refused")
	}
	// A replica whose clock is 5 s behind must not see the window as empty.
	if r := s.reserve(l, now-5_000_000, 1); r.Granted || r.RetryAfter < 6*time.Second {
		t.Fatalf("behind-clock reserve = %+v; want refused for at least 6s", r)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Limit: -1},
		{Window: time.Millisecond},
		{Limit: 100, DailyLimit: 50},
		{SearchLimit: -5},
		{CallLead: 11 * time.Second},
		{RetrySpread: time.Minute},
	} {
		if _, err := NewMemory(c); err == nil {
			t.Errorf("NewMemory(%+v) succeeded; want an error", c)
		}
	}
	if _, err := NewMemory(Config{DailyLimit: -1}); err != nil {
		t.Errorf("no daily limit: %v", err)
	}
}
