package server

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// The Grafana dashboard and the alert rules in deploy/ name metrics and
// labels; these tests hold them to the registry of a running server, so a
// renamed metric or label cannot leave a panel blank or an alert silent.

const (
	dashboardPath = "../deploy/grafana/hubsync.json"
	rulesPath     = "../deploy/prometheus/hubsync-rules.yml"
)

// registeredMetrics starts a server with every part on and returns its
// metric names with their label names, from the registry's descriptors (a
// vector that has seen no value yet is described all the same).
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	db := dbtest.Migrated(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	ch := make(chan *prometheus.Desc)
	go func() {
		srv.in.reg.Describe(ch)
		close(ch)
	}()
	nameRE := regexp.MustCompile(`fqName: "([^"]+)"`)
	labelsRE := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	constRE := regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range ch {
		s := d.String()
		m := nameRE.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("cannot read a metric name from %s", s)
		}
		var labels []string
		if l := labelsRE.FindStringSubmatch(s); l != nil && strings.TrimSpace(l[1]) != "" {
			for _, x := range strings.Split(l[1], ",") {
				labels = append(labels, strings.TrimSpace(x))
			}
		}
		if c := constRE.FindStringSubmatch(s); c != nil && strings.TrimSpace(c[1]) != "" {
			for _, kv := range strings.Split(c[1], ",") {
				labels = append(labels, strings.TrimSpace(strings.SplitN(kv, "=", 2)[0]))
			}
		}
		out[m[1]] = labels
	}
	if _, ok := out[MetricQueueDepth]; !ok {
		t.Fatalf("the registry lacks %s: %v", MetricQueueDepth, out)
	}
	return out
}

var (
	metricRE = regexp.MustCompile(`\b(hubsync_[a-zA-Z0-9_]+)(\{[^}]*\})?`)
	// A label matcher inside a selector.
	matcherRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	groupRE   = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
)

// targetLabels are attached by Prometheus when it scrapes, not by the program;
// le is a histogram bucket's.
var targetLabels = []string{"job", "instance"}

// checkExpr reports the metrics and labels of expr that the registry lacks.
func checkExpr(t *testing.T, where, expr string, reg map[string][]string) (used []string) {
	t.Helper()
	var exprLabels []string
	for _, m := range metricRE.FindAllStringSubmatch(expr, -1) {
		name, labels := m[1], reg[m[1]]
		known := labels != nil || slices.Contains(keys(reg), name)
		extra := targetLabels
		if !known {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok {
					if l, ok := reg[base]; ok {
						known, labels = true, l
						if suffix == "_bucket" {
							extra = append(slices.Clone(extra), "le")
						}
					}
				}
			}
		}
		if !known {
			t.Errorf("%s: metric %s is not registered by the server (expression %q)", where, name, expr)
			continue
		}
		used = append(used, name)
		all := append(slices.Clone(labels), extra...)
		exprLabels = append(exprLabels, all...)
		for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(all, lm[1]) {
				t.Errorf("%s: %s has no label %q (it has %v)", where, name, lm[1], labels)
			}
		}
	}
	for _, g := range groupRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(exprLabels, l) {
				t.Errorf("%s: groups by %q, which none of its metrics has (expression %q)", where, l, expr)
			}
		}
	}
	return used
}

func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dashboardExprs returns every query expression of the dashboard, checking
// on the way that every panel and query uses the datasource variable.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string
		Templating struct {
			List []struct{ Name, Type, Query any }
		}
		Panels []struct {
			Title      string
			Type       string
			Datasource *struct{ Type, UID string }
			Targets    []struct {
				Expr       string
				Datasource *struct{ Type, UID string }
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardPath, err)
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			dsVar = v.Name.(string)
		}
	}
	if dsVar == "" {
		t.Fatalf("%s has no Prometheus datasource variable", dashboardPath)
	}
	exprs := map[string]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${"+dsVar+"}" {
			t.Errorf("panel %q does not use the datasource variable ${%s}", p.Title, dsVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, q := range p.Targets {
			if q.Datasource == nil || q.Datasource.UID != "${"+dsVar+"}" {
				t.Errorf("panel %q query %d does not use the datasource variable", p.Title, i)
			}
			exprs[p.Title+" #"+string(rune('A'+i))] = q.Expr
		}
	}
	return exprs
}

// ruleExprs returns the expression of every alert rule.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Alert, Record, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	exprs := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert+r.Record] = r.Expr
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s has no rules", rulesPath)
	}
	return exprs
}

func TestDeployMetricsExist(t *testing.T) {
	reg := registeredMetrics(t)
	t.Run("grafana", func(t *testing.T) {
		used := map[string]bool{}
		for where, expr := range dashboardExprs(t) {
			for _, n := range checkExpr(t, dashboardPath+": "+where, expr, reg) {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
			}
		}
		// The operator-facing figures the issue asks for are all on it.
		for _, m := range []string{MetricQueueDepth, MetricOldestPendingAge, MetricEventsEnqueued, MetricEventsProcessed,
			MetricHubSpotCalls, MetricHubSpotRateLimited, MetricBudgetTokens, MetricBudgetLimit, MetricWebhookVerifyFailed,
			MetricWebhookRejected, MetricHubSpotDuration, MetricWebhookDuration, MetricEventWait, MetricLastClaim} {
			if !used[m] {
				t.Errorf("the dashboard shows no panel of %s", m)
			}
		}
	})
	t.Run("rules", func(t *testing.T) {
		for name, expr := range ruleExprs(t) {
			checkExpr(t, rulesPath+": "+name, expr, reg)
		}
	})
}

// Metric names follow Prometheus's conventions: counters end in _total,
// nothing else does, durations are in seconds.
func TestMetricNamesFollowConventions(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	mfs, err := srv.in.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "hubsync_") {
			continue
		}
		counter := mf.GetType().String() == "COUNTER"
		if counter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %s: counters, and only counters, end in _total", name, mf.GetType())
		}
		for _, unit := range []string{"_ms", "_milliseconds", "_minutes", "_hours", "_duration", "_age", "_latency"} {
			if strings.HasSuffix(name, unit) {
				t.Errorf("%s: time is in seconds, suffixed _seconds", name)
			}
		}
	}
}

// promtool, when installed, parses every dashboard expression (the
// dashboard's variables replaced by values).
func TestDashboardExpressionsParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus); .ci/run installs it when it can")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for _, expr := range dashboardExprs(t) {
		expr = strings.NewReplacer("$__rate_interval", "1m", "$job", ".*").Replace(expr)
		js, _ := json.Marshal(expr)
		i++
		fmt.Fprintf(&b, "      - record: dashboard:expr_%d\n        expr: %s\n", i, js)
	}
	path := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool rejects a dashboard expression: %v\n%s", err, out)
	}
}

// The rules' own unit tests, when promtool is installed.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus); .ci/run installs it when it can")
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(promtool, "test", "rules", "hubsync-rules.test.yml")
	cmd.Dir = filepath.Dir(rulesPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
