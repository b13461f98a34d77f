package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hubsync/hubsync/cmd/hubsync/internal/demo"
)

func init() {
	register("chaos", command{summary: "kill replicas and restart the database under a two-way workload, then check both sides", run: runChaos})
}

// errChaosFailed makes chaos exit non-zero on a loss, duplicate, resurrection
// or loop; the verdict has already said which.
var errChaosFailed = errors.New("the chaos run lost, duplicated, resurrected or looped a change, or did not settle (see the verdict above)")

func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chaos", stderr)
	dbURL := fs.String("database-url", "", "an empty PostgreSQL or MySQL/MariaDB database the replicas share (required; SQLite is refused)")
	replicas := fs.Int("replicas", demo.ChaosReplicasDefault, "number of replicas (hubsync serve processes)")
	changes := fs.Int("changes", demo.ChaosChangesDefault, "number of local record changes (creates, updates, deletes); HubSpot user edits scale with it")
	killEvery := fs.String("kill-every", "2s-5s", `SIGKILL a random replica (and restart it) every MIN-MAX, e.g. 2s-5s; "off" for none`)
	maxKills := fs.Int("kills", 0, "stop killing after this many kills; 0: no limit")
	dbRestartCmd := fs.String("db-restart-cmd", "", `shell command that restarts the database, e.g. "pg_ctlcluster 16 main restart"`)
	dbRestarts := fs.Int("db-restarts", 0, "how many times to run -db-restart-cmd, spread over the workload")
	rateLimit := fs.Int("rate-limit", demo.ChaosRateLimitDefault, "HubSpot calls per 10 s (the simulator's limit and the replicas' budget)")
	faults := fs.String("faults", demo.FaultsAll, fmt.Sprintf(`the simulator's injected faults: %s, %s, or a comma list of %s; e.g. "5xx,423,latency,partial,webhooks" leaves out the injected 429s, whose budget pauses hide what a kill costs`,
		demo.FaultsAll, demo.FaultsNone, strings.Join(demo.FaultKinds, ", ")))
	seed := fs.Int64("seed", demo.SeedDefault, "seed of the workload, the faults and the kills")
	duration := fs.Duration("duration", demo.ChaosDurationDefault, "give up (and fail) if the run has not settled within this time")
	dir := fs.String("dir", "", "directory for the replicas' logs; default a new temporary directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync chaos -database-url URL [flags]")
		fmt.Fprintln(stderr, "\nStarts the HubSpot simulator with faults and N `hubsync serve` replicas of this binary on one")
		fmt.Fprintln(stderr, "database, drives the demo's two-way workload through the records API and the simulator's users,")
		fmt.Fprintln(stderr, "SIGKILLs a random replica every few seconds and restarts it, optionally restarts the database,")
		fmt.Fprintln(stderr, "then settles and prints a verdict. Exits 1 on any loss, duplicate, resurrection or loop.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if *dbURL == "" {
		fs.Usage()
		return fmt.Errorf("-database-url is required: an empty PostgreSQL or MySQL database: %w", errUsage)
	}
	killMin, killMax, err := parseKillEvery(*killEvery)
	if err != nil {
		return err
	}
	if _, _, err := demo.ParseFaults(*faults); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the hubsync executable: %w", err)
	}
	rep, err := demo.RunChaos(ctx, demo.ChaosConfig{
		DatabaseURL: *dbURL, Binary: bin, Replicas: *replicas, Changes: *changes,
		KillMin: killMin, KillMax: killMax, MaxKills: *maxKills, DBRestartCmd: *dbRestartCmd, DBRestarts: *dbRestarts,
		RateLimit: *rateLimit, Faults: *faults, Seed: *seed, Duration: *duration, Dir: *dir, Out: stdout,
	})
	if err != nil {
		return err
	}
	rep.WriteChaos(stdout)
	if rep.Failed() {
		return errChaosFailed
	}
	return nil
}

// parseKillEvery reads "MIN-MAX" (or one duration, or "off": a negative MIN).
func parseKillEvery(s string) (time.Duration, time.Duration, error) {
	if s == "off" {
		return -1, -1, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := time.ParseDuration(lo)
	b, err2 := time.ParseDuration(hi)
	if err1 != nil || err2 != nil || a <= 0 || b < a {
		return 0, 0, fmt.Errorf("-kill-every %q: write MIN-MAX such as 2s-5s, one duration, or off", s)
	}
	return a, b, nil
}
