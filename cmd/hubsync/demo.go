package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hubsync/hubsync/cmd/hubsync/internal/demo"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func init() {
	register("demo", command{summary: "run the two-way sync demo on embedded SQLite", run: runDemo})
}

// errDiffer makes the demo exit non-zero when the two sides do not agree; the
// report has already said why.
var errDiffer = errors.New("the two sides do not agree (see the report above)")

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	records := fs.Int("records", 0, fmt.Sprintf("number of local record changes (creates, updates, deletes); HubSpot-side edits scale with it (default %d; %d with -dispatch qstash)", demo.ChangesDefault, demo.QStashChangesDefault))
	duration := fs.Duration("duration", 0, fmt.Sprintf("give up (and fail) if both sides have not converged within this time (default %s; %s with -dispatch qstash)", demo.DurationDefault, demo.QStashDurationDefault))
	dispatchMode := fs.String("dispatch", demo.DispatchPoll, "how outbound events reach the worker: poll, or qstash (through the QStash emulator, with its delivery faults when -faults, to the signed worker endpoint)")
	seed := fs.Int64("seed", demo.SeedDefault, "seed of the workload and of the simulator's faults")
	faults := faultsFlag{spec: demo.FaultsAll}
	fs.Var(&faults, "faults", fmt.Sprintf(`the simulator's injected faults (5xx, 423, 429, latency, failed and duplicate webhooks, rare validation errors): %s (a bare -faults, or true), %s (or false), or a comma list of %s, as hubsync chaos`,
		demo.FaultsAll, demo.FaultsNone, strings.Join(demo.FaultKinds, ", ")))
	keep := fs.Bool("keep", false, "keep the temporary directory (SQLite database, service log) and print its path")
	quiet := fs.Bool("quiet", false, "no progress display, only the report")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync demo [flags]")
		fmt.Fprintln(stderr, "\nRuns the HubSpot simulator and hubsync on SQLite in a temporary directory, drives")
		fmt.Fprintln(stderr, "a two-way workload with faults and rate limiting, and checks that both sides agree.")
		fmt.Fprintln(stderr, "Exits 0 only when every record is equal on both sides and no change looped.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(bareFaults(args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if *records < 0 || (*records == 0 && isSet(fs, "records")) {
		return fmt.Errorf("-records is %d; use a positive number of changes, e.g. -records 300", *records)
	}
	if *duration < 0 || (*duration == 0 && isSet(fs, "duration")) {
		return fmt.Errorf("-duration is %s; use a positive duration, e.g. -duration 2m", *duration)
	}
	if *dispatchMode != demo.DispatchPoll && *dispatchMode != demo.DispatchQStash {
		return fmt.Errorf("-dispatch is %q; use %s or %s", *dispatchMode, demo.DispatchPoll, demo.DispatchQStash)
	}
	out := stdout
	if f, ok := stdout.(*os.File); ok {
		out = f // keeps terminal detection for the progress bars
	}
	rep, err := demo.Run(ctx, demo.Config{
		Changes: *records, Duration: *duration, Seed: *seed, NoFaults: faults.spec == demo.FaultsNone, Faults: faults.faults(),
		Keep: *keep, Quiet: *quiet, Out: out, Dispatch: *dispatchMode,
	})
	if err != nil {
		return err
	}
	rep.Write(stdout)
	if !rep.OK() {
		return errDiffer
	}
	return nil
}

// faultsFlag is demo's -faults. It takes hubsync chaos's values (all, none,
// or a comma list of kinds) and, as when it was a boolean, true and false; a
// bare -faults means all (bareFaults).
type faultsFlag struct{ spec string } // canonical (demo.ParseFaults)

func (f *faultsFlag) String() string { return f.spec }

// bareFaults rewrites a bare -faults (the boolean form: followed by another
// flag, or last) to -faults=all, so that the flag can take a value without
// the flag package calling a bad one an "invalid boolean value".
func bareFaults(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if (a == "-faults" || a == "--faults") && (i+1 == len(out) || strings.HasPrefix(out[i+1], "-")) {
			out[i] = "-faults=" + demo.FaultsAll
		}
	}
	return out
}

func (f *faultsFlag) Set(s string) error {
	switch s {
	case "true":
		s = demo.FaultsAll
	case "false":
		s = demo.FaultsNone
	}
	_, spec, err := demo.ParseFaults(s)
	if err != nil {
		return err
	}
	f.spec = spec
	return nil
}

// faults returns the faults to inject instead of the default ones; nil for
// all of them (and for none, which demo.Config.NoFaults says).
func (f *faultsFlag) faults() *hubspotsim.Faults {
	if f.spec == demo.FaultsAll || f.spec == demo.FaultsNone {
		return nil
	}
	faults, _, _ := demo.ParseFaults(f.spec) // validated by Set
	return &faults
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
