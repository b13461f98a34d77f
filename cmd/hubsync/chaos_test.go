package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func TestChaosRefusesSQLite(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCmd(t, baseEnv(), "chaos", "-database-url", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if code != 1 || !strings.Contains(errOut, "PostgreSQL or MySQL") {
		t.Fatalf("chaos on SQLite: exit %d, stderr %q; want exit 1 naming PostgreSQL or MySQL", code, errOut)
	}
	code, _, errOut = runCmd(t, baseEnv(), "chaos")
	if code != 2 || !strings.Contains(errOut, "usage: hubsync chaos -database-url URL") {
		t.Fatalf("chaos without a database: exit %d, stderr %q; want exit 2 with the usage", code, errOut)
	}
}

func TestChaosFaultsFlag(t *testing.T) {
	t.Parallel()
	// Refused before any database is reached: the URL's server need not exist.
	code, _, errOut := runCmd(t, baseEnv(), "chaos", "-database-url", "postgres://nobody@127.0.0.1:1/none", "-faults", "5xx,timeouts")
	if code != 1 {
		t.Fatalf("chaos -faults 5xx,timeouts: exit %d, stderr %q; want exit 1", code, errOut)
	}
	for _, want := range []string{`-faults "5xx,timeouts": unknown kind "timeouts"`, "all, none, or a comma list of 5xx, 423, 429, latency, partial, webhooks"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	code, _, errOut = runCmd(t, baseEnv(), "chaos", "-h")
	if code != 0 || !strings.Contains(errOut, "-faults") {
		t.Errorf("chaos -h: exit %d, stderr lacks -faults:\n%s", code, errOut)
	}
}

// chaosTimeout bounds the short chaos run: a killed replica's claims wait
// for their lease (the workers' 30 s, no longer extended by its heartbeats)
// before another replica takes them; the internal relay's leases last a
// minute.
const chaosTimeout = 6 * time.Minute

// TestChaosPostgres runs a short chaos run with CI set: two replicas on
// PostgreSQL, one SIGKILLed and restarted during the workload, and a passing
// verdict. It takes minutes (a lease must expire), so it runs only in CI.
func TestChaosPostgres(t *testing.T) {
	if os.Getenv("CI") == "" || testing.Short() {
		t.Skip("a chaos run takes minutes; it runs with CI set")
	}
	t.Parallel()
	db := dbtest.New(t, store.Postgres)
	ctx, cancel := context.WithTimeout(context.Background(), chaosTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "chaos", "-database-url", db.URL,
		"-changes", "200", "-replicas", "2", "-kill-every", "500ms-1s", "-kills", "1", "-duration", "5m", "-dir", t.TempDir())
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok || err != nil {
		t.Fatalf("chaos: %v (exit %v)\nstdout:\n%s\nstderr:\n%s", err, ee, out, stderr.String())
	}
	for _, want := range []string{"CHAOS VERDICT: PASS", "duplicates 0, lost 0, resurrected 0, loops 0", "stuck leases 0",
		"injected faults: all", "recovery after a kill: events leased by a replica when it was SIGKILLed"} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`kills: (\d+) SIGKILLs`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no kill count in the verdict:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n != 1 {
		t.Errorf("%d kills, want 1:\n%s", n, out)
	}
}
