package qstashsim

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func FuzzParseFlowControlValue(f *testing.F) {
	for _, s := range []string{"parallelism=12, rate=150, period=10s", "rate=5", "parallelism=1", "rate=1,period=1d", "=,=", "rate=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fc, err := ParseFlowControlValue(v)
		if err != nil {
			return
		}
		if fc.Parallelism < 0 || fc.Rate < 0 || (fc.Parallelism == 0 && fc.Rate == 0) {
			t.Fatalf("%q: accepted %+v", v, fc)
		}
		if fc.Rate > 0 && (fc.Period <= 0 || fc.Period > 7*24*time.Hour) {
			t.Fatalf("%q: rate without a sane period: %+v", v, fc)
		}
	})
}

func FuzzParseRetryDelay(f *testing.F) {
	for _, s := range []string{"pow(2, retried) * 1000", "1000 * (1 + retried)", "max(1000, pow(2, retried) * 100)", "((((1))))", "-(-1)", "1/0", "min(1,2,3,4)"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, expr string, retried int) {
		rd, err := ParseRetryDelay(expr)
		if err != nil {
			return
		}
		if d := rd.Delay(retried); d < 0 || d > RetryAfterMax {
			t.Fatalf("%q(%d) = %v, outside [0, a day]", expr, retried, d)
		}
	})
}

func FuzzParseDelay(f *testing.F) {
	for _, s := range []string{"10s", "1d", "1h30m", "365d", "-1s", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := ParseDelay(v)
		if err == nil && (d < 0 || d > delayMax) {
			t.Fatalf("%q: %v accepted", v, d)
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "6m5s", "Sun, 01 Mar 2026 12:00:30 GMT", "86401", "-1", "1e9"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d, ok := ParseRetryAfter(v, now); ok && (d < 0 || d > RetryAfterMax) {
			t.Fatalf("%q: %v", v, d)
		}
	})
}

// FuzzPublishRequest fuzzes what a publisher controls: the destination path,
// its query and the Upstash-* headers.
func FuzzPublishRequest(f *testing.F) {
	f.Add("http://127.0.0.1:8080/qstash/hubspot", "", "5", "pow(2, retried) * 1000", "10s", "", "30s", "POST", "hubspot", "parallelism=12, rate=150, period=10s")
	f.Add("https%3A%2F%2Fexample.com%2Fx", "a=b", "", "", "", "1770000000", "", "put", "", "")
	f.Add("nope", "", "-1", "(", "soon", "x", "0s", "BREW", "k", "")
	s, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, path, query, retries, retryDelay, delay, notBefore, timeout, method, fcKey, fcValue string) {
		dest, err := parseDestination(path, query)
		if err == nil && !strings.HasPrefix(dest, "http://") && !strings.HasPrefix(dest, "https://") {
			t.Fatalf("destination %q accepted", dest)
		}
		h := http.Header{}
		for k, v := range map[string]string{
			HeaderRetries: retries, HeaderRetryDelay: retryDelay, HeaderDelay: delay, HeaderNotBefore: notBefore,
			HeaderTimeout: timeout, HeaderMethod: method, HeaderFlowControlKey: fcKey, HeaderFlowControlValue: fcValue,
		} {
			if v != "" {
				h.Set(k, v)
			}
		}
		o, err := s.parsePublishHeaders(h, nil)
		if err != nil {
			return
		}
		if o.retries < 0 || o.retries > s.cfg.MaxRetries || o.timeout <= 0 || o.delay < 0 || o.method == "" {
			t.Fatalf("accepted %+v", o)
		}
		if o.flowKey != "" && o.flow.Parallelism == 0 && o.flow.Rate == 0 {
			t.Fatalf("flow key without limits: %+v", o)
		}
		if o.flowKey == "" && fcValue != "" {
			t.Fatalf("flow value without a key accepted")
		}
	})
}
