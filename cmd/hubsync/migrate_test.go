package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateArguments: the action may come before the flags or after them,
// and an argument left over is refused rather than ignored (flags after the
// action were once ignored, so `migrate up -database-url URL` migrated the
// default SQLite file instead of URL).
func TestMigrateArguments(t *testing.T) {
	dir := t.TempDir()
	for i, args := range [][]string{
		{"migrate", "up", "-database-url", "sqlite:" + filepath.Join(dir, "after.db")},
		{"migrate", "-database-url", "sqlite:" + filepath.Join(dir, "before.db"), "up"},
		{"migrate", "-database-url", "sqlite:" + filepath.Join(dir, "bare.db")},
	} {
		code, out, errOut := runCmd(t, baseEnv(), args...)
		if code != 0 || !strings.Contains(out, "applied migration") {
			t.Fatalf("%v = %d\n%s%s", args, code, out, errOut)
		}
		name := []string{"after.db", "before.db", "bare.db"}[i]
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%v migrated no %s: %v", args, name, err)
		}
	}
	code, out, _ := runCmd(t, baseEnv(), "migrate", "status", "-database-url", "sqlite:"+filepath.Join(dir, "after.db"))
	if code != 0 || !strings.Contains(out, "sqlite schema at version") || strings.Contains(out, "pending") {
		t.Fatalf("status after the flags' database = %d %q; want it up to date", code, out)
	}
	// A deploy can gate on it: pending migrations exit 1.
	fresh := "sqlite:" + filepath.Join(dir, "fresh.db")
	if code, out, _ := runCmd(t, baseEnv(), "migrate", "status", "-database-url", fresh); code != 1 || !strings.Contains(out, "pending: run `hubsync migrate`") {
		t.Fatalf("status of an unmigrated database = %d %q; want exit 1 naming the pending migrations", code, out)
	}
	for _, args := range [][]string{{"migrate", "status", "extra"}, {"migrate", "sideways"}, {"migrate", "up", "-nosuchflag"}} {
		if code, _, errOut := runCmd(t, baseEnv(), args...); code == 0 || !strings.Contains(errOut, "usage: hubsync migrate") {
			t.Errorf("%v = exit %d, stderr %q; want the usage and a failure", args, code, errOut)
		}
	}
}
