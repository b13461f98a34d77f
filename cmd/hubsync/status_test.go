package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestStatusShowsWhenTheBudgetWasShort: hubsync status says when the shared
// budget last had no room for a call (the instant after which the outbound
// workers hold their calls), in its table and in -json, and "-" for a key
// that never was short.
func TestStatusShowsWhenTheBudgetWasShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Migrated(t, store.SQLite)
	b, err := budget.NewSQL(db.DB, store.SQLite, budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(ctx, "never-short", 1); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	if err := b.NoteShort(ctx, "short"); err != nil {
		t.Fatal(err)
	}
	env := baseEnv("HUBSYNC_DATABASE_URL=" + db.URL)

	code, out, errOut := runCmd(t, env, "status", "-json")
	var rep struct {
		Budget []struct {
			Key     string     `json:"key"`
			ShortAt *time.Time `json:"short_at"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("status -json = %d\n%s%s", code, out, errOut)
	}
	shortAt := map[string]*time.Time{}
	for _, k := range rep.Budget {
		shortAt[k.Key] = k.ShortAt
	}
	if at, ok := shortAt["short"]; !ok || at == nil || at.Before(before) {
		t.Errorf("status -json short_at of the key noted short = %v (listed: %v); want an instant after %s", at, ok, before)
	}
	if at, ok := shortAt["never-short"]; !ok || at != nil {
		t.Errorf("status -json short_at of a key never short = %v (listed: %v); want none", at, ok)
	}

	code, out, errOut = runCmd(t, env, "status")
	if code != 0 || !strings.Contains(out, "LAST SHORT") {
		t.Fatalf("status = %d\n%s%s", code, out, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "short":
			rows++
			if want := shortAt["short"].Format(time.RFC3339); f[len(f)-1] != want {
				t.Errorf("status row %q ends in %q; want the instant it was short, %s", line, f[len(f)-1], want)
			}
		case "never-short":
			rows++
			if f[len(f)-1] != "-" {
				t.Errorf("status row %q; want - as its last column", line)
			}
		}
	}
	if rows != 2 {
		t.Errorf("status lists %d of the two budget keys:\n%s", rows, out)
	}
}

// `hubsync status` shows today's calls as the budget counts them, in the
// account's days, without being told the zone: the row holds the day's end
// and the zone. The zone is one whose date differs from UTC's now, so that
// counting UTC days would show 0.
func TestStatusCountsTheAccountsDay(t *testing.T) {
	t.Parallel()
	name := "Pacific/Kiritimati" // UTC+14: another date from 10:00 UTC on
	if time.Now().UTC().Hour() < 10 {
		name = "Pacific/Pago_Pago" // UTC-11: another date until 11:00 UTC
	}
	zone, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.Migrated(t, store.SQLite)
	b, err := budget.NewSQL(db.DB, store.SQLite, budget.Config{TimeZone: zone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(context.Background(), "k", 3); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+db.URL), "status", "-json")
	var rep struct {
		Budget []struct {
			CallsToday int64      `json:"calls_today"`
			DayEnds    *time.Time `json:"day_ends"`
			TimeZone   string     `json:"time_zone"`
		}
	}
	y, m, d := time.Now().In(zone).Date()
	midnight := time.Date(y, m, d+1, 0, 0, 0, 0, zone)
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Budget) != 1 || rep.Budget[0].CallsToday != 3 || rep.Budget[0].TimeZone != name ||
		rep.Budget[0].DayEnds == nil || !rep.Budget[0].DayEnds.Equal(midnight) {
		t.Fatalf("status -json = %d\n%s%s; want 3 calls today in %s, the day ending at %s", code, out, errOut, name, midnight.UTC())
	}
	if code, out, _ := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+db.URL), "status"); code != 0 || !strings.Contains(out, name) || !strings.Contains(out, midnight.UTC().Format(time.RFC3339)) {
		t.Fatalf("status = %d\n%s; want the zone and the day's end in the table", code, out)
	}
}
