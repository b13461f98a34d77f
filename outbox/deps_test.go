package outbox_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The workers and the vocabulary they share must not link a database driver:
// only the root facade (hubsync.Open) and the backends do. A driver here means
// something in the data path imported the facade or a backend.
func TestWorkersLinkNoDriver(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	pkgs := []string{"outbox", "apply", "inbound", "outbound", "records", "links", "mapping", "budget", "relay"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/hubsync/hubsync/"+p)
	}
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	driver := regexp.MustCompile(`^(github\.com/jackc/pgx|github\.com/go-sql-driver/|modernc\.org/sqlite|github\.com/mattn/go-sqlite3)`)
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		if driver.MatchString(dep) {
			bad = append(bad, dep)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s link database drivers %v; import outbox, not the root package or a backend", strings.Join(pkgs, ", "), bad)
	}
}
