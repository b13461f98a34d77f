package qstashsim

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseFlowControlValue(t *testing.T) {
	t.Parallel()
	good := map[string]FlowControl{
		"parallelism=12, rate=150, period=10s": {Parallelism: 12, Rate: 150, Period: 10 * time.Second},
		"Rate=5":                               {Rate: 5, Period: time.Second},
		"parallelism=1":                        {Parallelism: 1},
		" rate = 3 ,period=1d ":                {Rate: 3, Period: 24 * time.Hour},
		"rate=100,period=1m30s":                {Rate: 100, Period: 90 * time.Second},
		"parallelism=12, period=10s":           {Parallelism: 12, Period: 10 * time.Second},
	}
	for in, want := range good {
		got, err := ParseFlowControlValue(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "rate", "rate=", "=5", "rate=0", "rate=-1", "rate=1.5", "parallelism=x",
		"period=10s", "parallelism=1, period=0s", "rate=1, period=0s", "rate=1, period=8d", "rate=1, rate=2", "burst=3", "rate=1;period=1s", "rate=10000000"} {
		if _, err := ParseFlowControlValue(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseDelay(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"10s": 10 * time.Second, "5m": 5 * time.Minute, "2h": 2 * time.Hour, "1d": 24 * time.Hour, "250ms": 250 * time.Millisecond, "0s": 0, "1h30m": 90 * time.Minute} {
		if got, err := ParseDelay(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10", "soon", "-1s", "d", "1.5d", "366d", "9000h", "1e3s"} {
		if _, err := ParseDelay(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"0":      0,
		"7":      7 * time.Second,
		"86401":  RetryAfterMax,
		"6m5s":   6*time.Minute + 5*time.Second,
		"100h":   RetryAfterMax,
		"1500ms": 1500 * time.Millisecond,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
		now.Add(48 * time.Hour).Format(http.TimeFormat):   RetryAfterMax,
	}
	for in, want := range cases {
		if got, ok := ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "soon", "-5", "-5s", "1.5", "Sun, 32 Foo 2026"} {
		if _, ok := ParseRetryAfter(in, now); ok {
			t.Errorf("%q: accepted", in)
		}
	}
}

func TestRetryDelayExpressions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr    string
		retried int
		want    time.Duration
	}{
		{"1000", 5, time.Second},
		{"1000 * (1 + retried)", 2, 3 * time.Second},
		{"pow(2, retried) * 1000", 0, time.Second},
		{"pow(2, retried) * 1000", 3, 8 * time.Second},
		{"max(1000, pow(2, retried) * 100)", 1, time.Second},
		{"min(5000, pow(2, retried) * 1000)", 10, 5 * time.Second},
		{"sqrt(retried) * 1000", 4, 2 * time.Second},
		{"abs(-3) * 1000", 0, 3 * time.Second},
		{"floor(1.7) + ceil(0.2) + round(2.5)", 0, 5 * time.Millisecond},
		{"exp(0) * 1000", 0, time.Second},
		{"-1000", 0, 0},                         // negative: at once
		{"1 / 0", 0, RetryAfterMax},             // infinite: capped
		{"0 / 0", 0, 0},                         // not a number: at once
		{"pow(10, 20)", 0, RetryAfterMax},       // capped at a day
		{"-(-(2)) * 500 - -0", 0, time.Second},  // unary minus
		{"10 - 2 - 3", 0, 5 * time.Millisecond}, // left associative
		{"2 * 3 + 4 * 5", 0, 26 * time.Millisecond},
	}
	for _, c := range cases {
		rd, err := ParseRetryDelay(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		if got := rd.Delay(c.retried); got != c.want {
			t.Errorf("%q at retried=%d: %v, want %v", c.expr, c.retried, got, c.want)
		}
	}
	for _, in := range []string{"", "retried +", "pow(2)", "pow(2, 3, 4)", "sqrt()", "min()", "foo(1)", "retry", "1..2",
		"(1", "1)", "2 ** 3", "pow 2", strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40), strings.Repeat("-", 40) + "1", strings.Repeat("1+", 300) + "1"} {
		if _, err := ParseRetryDelay(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{12 * time.Second, 148 * time.Second, 1808 * time.Second, 22026 * time.Second, 24 * time.Hour, 24 * time.Hour}
	for i, w := range want {
		if got := DefaultBackoff(i + 1).Truncate(time.Second); got != w {
			t.Errorf("retry %d: %v, want %v", i+1, got, w)
		}
	}
}
