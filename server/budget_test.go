package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// TestSyncWorkerSpendsTheSharedBudget checks that the assembled server hands
// the shared budget to its SyncWorker: a contact created in HubSpot reaches the
// local records through the webhook and the SyncWorker's read of the object,
// and every HubSpot call of that read was reserved from the server's budget
// (the outbound worker is off, so the SyncWorker is the only caller).
// And the server's HubSpot client calibrates that budget: a 429 to the
// SyncWorker's read pauses it for every replica.
func TestSyncWorkerSpendsTheSharedBudget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		sim := hubspotsim.NewTest(t, hubspotsim.Config{})
		srv, err := New(Config{
			DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(),
			HubSpotAccessToken: hubspotsim.AccessTokenDefault, HubSpotClientSecret: hubspotsim.ClientSecretDefault,
			DisableOutboundWorker: true, APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.Stop(context.Background()); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
		base := "http://" + srv.Addr()
		if err := sim.SetWebhookURL(base + "/webhooks/hubspot"); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.UserCreate("contacts", map[string]string{"email": "budget@example.com", "firstname": "Bea"}); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "the HubSpot contact in the local records", func() bool {
			req, _ := http.NewRequest("GET", base+"/api/records/contacts", nil)
			req.Header.Set("Authorization", "Bearer "+testAPIToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var body struct {
				Records []struct {
					Fields map[string]any `json:"fields"`
				} `json:"records"`
			}
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
				return false
			}
			for _, r := range body.Records {
				if r.Fields["email"] == "budget@example.com" {
					return true
				}
			}
			return false
		})
		// The question for the account's time zone at start is made once,
		// before the budget exists, and is not the SyncWorker's.
		c := sim.Counters()
		reads := c.Requests - c.RequestsByPath["GET /account-info/v3/details"]
		if reads == 0 {
			t.Fatal("the SyncWorker made no HubSpot call; the test needs it to read the created contact")
		}
		// The calls reserved through the server's budget, as /metrics counts them.
		_, metrics := get(t, base+"/metrics")
		var reserved int64
		prefix := MetricBudgetTokens + `{key="` + BudgetKeyDefault + `"} `
		for _, l := range strings.Split(metrics, "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				if reserved, err = strconv.ParseInt(v, 10, 64); err != nil {
					t.Fatalf("%s: %v", l, err)
				}
			}
		}
		if reserved < reads {
			t.Fatalf("the SyncWorker reserved %d calls from the budget for its %d HubSpot calls; the server must give it the shared budget:\n%s",
				reserved, reads, grepLines(metrics, "budget"))
		}

		if err := sim.SetFaults(hubspotsim.Faults{Error429: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.UserCreate("contacts", map[string]string{"email": "limited@example.com"}); err != nil {
			t.Fatal(err)
		}
		budgetPause(t, db.DB, d, "a 429 to the SyncWorker's read")
	})
}

// budgetPause waits until the shared budget on db is paused, after what
// cause says, and returns until when.
func budgetPause(t *testing.T, db *sql.DB, d store.Dialect, cause string) time.Time {
	t.Helper()
	bud, err := budget.NewSQL(db, d, budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var paused time.Time
	testwait.For(t, "the budget paused after "+cause, func() bool {
		use, err := bud.Usage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range use {
			if u.PausedUntil != nil {
				paused = *u.PausedUntil
				return true
			}
		}
		return false
	})
	return paused
}

// tokyoDay is a test of the account's day in Asia/Tokyo: a simulator whose
// account is there, and Tokyo's next midnight.
type tokyoDay struct {
	db    *dbtest.DB
	sim   *hubspotsim.Server
	tokyo *time.Location
}

func newTokyoDay(t *testing.T, dailyLimit int) tokyoDay {
	t.Helper()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	return tokyoDay{db: dbtest.Migrated(t, store.SQLite), sim: hubspotsim.NewTest(t, hubspotsim.Config{TimeZone: "Asia/Tokyo", DailyLimit: dailyLimit}), tokyo: tokyo}
}

// midnight is Tokyo's next midnight.
func (d tokyoDay) midnight() time.Time {
	y, m, dd := time.Now().In(d.tokyo).Date()
	return time.Date(y, m, dd+1, 0, 0, 0, 0, d.tokyo)
}

// serve starts a server (SyncWorker, no outbound worker) against the
// simulator and points its webhooks at it.
func (d tokyoDay) serve(t *testing.T) *Server {
	t.Helper()
	srv, err := New(Config{
		DatabaseURL: d.db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: d.sim.URL(),
		HubSpotAccessToken: hubspotsim.AccessTokenDefault, HubSpotClientSecret: hubspotsim.ClientSecretDefault,
		DisableOutboundWorker: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv
}

// pauseOfARead has HubSpot create a contact, whose webhook makes the
// SyncWorker read it, and returns the budget's pause once that read's DAILY
// 429 has set it.
func (d tokyoDay) pauseOfARead(t *testing.T, srv *Server) time.Time {
	t.Helper()
	if err := d.sim.SetWebhookURL("http://" + srv.Addr() + "/webhooks/hubspot"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.sim.UserCreate("contacts", map[string]string{"email": "late@example.com"}); err != nil {
		t.Fatal(err)
	}
	return budgetPause(t, d.db.DB, store.SQLite, "the DAILY 429 to the SyncWorker's read")
}

// TestDailyPauseEndsAtTheAccountsMidnight: the server asks HubSpot for the
// account's time zone at start, and a DAILY 429 pauses the shared budget
// until midnight there (HubSpot's reset), not until midnight UTC.
func TestDailyPauseEndsAtTheAccountsMidnight(t *testing.T) {
	// One call a day: the server's question for the zone takes it, so the
	// SyncWorker's read is refused with a DAILY 429.
	d := newTokyoDay(t, 1)
	before := d.midnight()
	srv := d.serve(t)
	if n := d.sim.Counters().RequestsByPath["GET /account-info/v3/details"]; n != 1 {
		t.Fatalf("the server asked for the account's details %d times at start; want once", n)
	}
	paused := d.pauseOfARead(t, srv)
	// The pause ends at the day's end the budget keeps (the test may cross
	// midnight meanwhile: either midnight will do); midnight UTC is the bug.
	if after := d.midnight(); paused.Before(before) || paused.After(after.Add(time.Second)) {
		t.Fatalf("paused until %s (%s in Tokyo); want the account's next midnight, %s", paused, paused.In(d.tokyo), before)
	}
}

// TestZoneUnknownAtStartKeepsTheRecordedDay: a replica whose question for
// the account's zone fails at start (here the day's calls are used up, so
// HubSpot answers 429) keeps the day another replica recorded in the shared
// budget: a DAILY 429 pauses until the account's midnight, not UTC's.
func TestZoneUnknownAtStartKeepsTheRecordedDay(t *testing.T) {
	d := newTokyoDay(t, 1)
	// Another replica, which knew the zone, began the day in the shared budget.
	earlier, err := budget.NewSQL(d.db.DB, store.SQLite, budget.Config{TimeZone: d.tokyo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := earlier.Reserve(context.Background(), BudgetKeyDefault, 1); err != nil {
		t.Fatal(err)
	}
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: d.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AccountDetails(context.Background()); err != nil { // the day's one call
		t.Fatal(err)
	}
	before := d.midnight()
	srv := d.serve(t)
	if n := d.sim.Counters().RateLimited429["DAILY"]; n != 1 {
		t.Fatalf("%d DAILY 429s at start; want the question for the zone refused", n)
	}
	paused := d.pauseOfARead(t, srv)
	if after := d.midnight(); paused.Before(before) || paused.After(after.Add(time.Second)) {
		t.Fatalf("paused until %s (%s in Tokyo); want the recorded day's end, the account's midnight %s", paused, paused.In(d.tokyo), before)
	}
}
