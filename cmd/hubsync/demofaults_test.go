package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/cmd/hubsync/internal/demo"
)

// demo's -faults takes chaos's values, and true, false and a bare -faults as when it was a boolean.
func TestDemoFaultsFlag(t *testing.T) {
	parse := func(args ...string) (faultsFlag, error) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := faultsFlag{spec: demo.FaultsAll}
		fs.Var(&f, "faults", "")
		return f, fs.Parse(bareFaults(args))
	}
	for _, c := range []struct {
		args []string
		spec string
	}{
		{nil, demo.FaultsAll},
		{[]string{"-faults"}, demo.FaultsAll},
		{[]string{"-faults=true"}, demo.FaultsAll},
		{[]string{"-faults=false"}, demo.FaultsNone},
		{[]string{"-faults=none"}, demo.FaultsNone},
		{[]string{"-faults=latency, 429"}, "429,latency"},
		{[]string{"-faults", "none"}, demo.FaultsNone},
		{[]string{"-faults", "429"}, "429"},
		{[]string{"-faults", "-faults=false", "-faults"}, demo.FaultsAll},
	} {
		f, err := parse(c.args...)
		if err != nil || f.spec != c.spec {
			t.Errorf("%q: spec %q, %v; want %q", c.args, f.spec, err, c.spec)
		}
	}
	f, _ := parse("-faults=429,latency")
	got := f.faults()
	if got == nil || got.Error429 != demo.Faults.Error429 || got.Latency != demo.Faults.Latency || got.Error500 != 0 || got.WebhookFailure != 0 {
		t.Errorf("-faults=429,latency injects %+v; want only the 429s and the latency of demo.Faults", got)
	}
	for _, spec := range []string{demo.FaultsAll, demo.FaultsNone} {
		if f, _ := parse("-faults=" + spec); f.faults() != nil {
			t.Errorf("-faults=%s: faults() = %+v; want nil (the default faults, or NoFaults)", spec, f.faults())
		}
	}
	if _, err := parse("-faults=bogus"); err == nil || !strings.Contains(err.Error(), strings.Join(demo.FaultKinds, ", ")) || strings.Contains(err.Error(), "boolean") {
		t.Errorf("-faults=bogus: %v; want an error listing the kinds, not a boolean's", err)
	}
}
