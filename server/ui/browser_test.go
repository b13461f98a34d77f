package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/server"
	"github.com/hubsync/hubsync/store"
)

const (
	adminToken = "admin-token-0123456789"
	apiToken   = "api-token-0123456789ab"
	// otherKey is a destination no worker serves: its events stay where the
	// test puts them.
	otherKey = "legacy-crm"
)

// browserDeadline bounds one browser test; every step inside waits on a
// condition, this only stops a hung browser.
const browserDeadline = 3 * time.Minute

// chromium finds a Chromium (or Chrome) binary. Without one the browser tests
// are skipped with the reason, except under CI, where they fail: a CI run
// must not pass by skipping them (.ci/run installs chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found on PATH; the dashboard's browser tests need one (apt-get install -y chromium)")
	}
	t.Skip("no Chromium found on PATH (chromium, chromium-browser, google-chrome): browser tests skipped; install it with apt-get install -y chromium")
	return ""
}

// newBrowser starts a headless Chromium at the given window width and
// returns its context.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // containers run tests as root
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	// The first run starts the browser, under a context without a deadline:
	// a deadline there would stop the whole browser.
	if err := chromedp.Do(bctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, browserDeadline)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// bundle is a running service with the HubSpot simulator.
type bundle struct {
	srv  *server.Server
	sim  *hubspotsim.Server
	base string
}

func startService(t *testing.T) bundle {
	t.Helper()
	db := dbtest.Migrated(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	srv, err := server.New(server.Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0",
		HubSpotAPIBase: sim.URL(), HubSpotAccessToken: hubspotsim.AccessTokenDefault,
		HubSpotClientSecret: hubspotsim.ClientSecretDefault, HubSpotAppID: "1000",
		AdminToken: adminToken, APITokens: []string{apiToken},
		Logger: slog.New(slog.DiscardHandler),
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
	return bundle{srv: srv, sim: sim, base: "http://" + srv.Addr()}
}

// createContact creates a contact through the records API and returns its id.
func (b bundle) createContact(t *testing.T, fields map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"fields": fields})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/api/records/contacts", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create contact: %d %s", resp.StatusCode, out)
	}
	var rec struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &rec); err != nil || rec.ID == "" {
		t.Fatalf("create contact: %s (%v)", out, err)
	}
	return rec.ID
}

// enqueueOther enqueues n outbound contact changes for otherKey and returns their ids.
func (b bundle) enqueueOther(t *testing.T, n int, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		p, err := outbox.Snapshot{ID: id, Fields: map[string]any{"email": id + "@example.com", "first_name": "Ada"}}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.srv.Store().Outbound().Enqueue(ctx, store.OutboundEvent{Destination: otherKey, ObjectType: "contacts", RecordID: id, EventType: store.EventUpdate, Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	return ids
}

// deadLetters makes n dead letters of otherKey, each failing with errMsg.
func (b bundle) deadLetters(t *testing.T, n int, prefix, errMsg string) []string {
	t.Helper()
	ctx := context.Background()
	ids := b.enqueueOther(t, n, prefix)
	evs, err := b.srv.Store().Outbound().ClaimIDs(ctx, ids, store.ClaimParams{Key: otherKey, Limit: n})
	if err != nil || len(evs) != n {
		t.Fatalf("claim: %d events, %v", len(evs), err)
	}
	for _, e := range evs {
		if err := b.srv.Store().Outbound().Fail(ctx, e.Lease(), errMsg); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func (b bundle) status(t *testing.T, id string) store.Status {
	t.Helper()
	e, err := b.srv.Store().Outbound().Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return e.Status
}

// run runs browser actions, failing t with the step's name.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		// Say what the page showed, to tell a slow step from a wrong one.
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " | flash: " + ((document.querySelector('#flash')||{}).textContent||"") + " | " + document.body.innerText.slice(-1500)`))
		t.Fatalf("%s: %v\npage: %s", step, err, state)
	}
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

// until waits until the JavaScript expression is true in the page.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(testwait.Deadline), chromedp.WithPollingInterval(50*time.Millisecond))
}

func signIn(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/admin/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), adminToken),
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#queues`)),
	)
}

func TestBrowserDashboard(t *testing.T) {
	ctx := newBrowser(t, 1366, 900)
	b := startService(t)

	// A wrong token is refused on the form, with a message.
	run(t, ctx, "wrong token",
		chromedp.Navigate(b.base+"/admin/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "not-the-admin-token"),
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#login-error`)),
	)
	msg := value(t, ctx, "sign-in error", chromedp.Text(chromedp.CSS(`#login-error`)))
	if !strings.Contains(msg, "not the admin token") {
		t.Fatalf("sign-in error = %q", msg)
	}
	signIn(t, ctx, b.base)

	// The overview shows work as it is enqueued: 4 changes for a destination
	// no worker serves stay pending, and contacts created through the API are
	// pushed to HubSpot and counted as processed.
	run(t, ctx, "overview before", until(`!document.querySelector('tr[data-queue="outbound/`+otherKey+`"]')`))
	b.enqueueOther(t, 4, "pending")
	run(t, ctx, "pending shown", until(`(document.querySelector('tr[data-queue="outbound/`+otherKey+`"] td.pending')||{}).textContent === "4"`))
	contact := b.createContact(t, map[string]any{"email": "grace@example.com", "first_name": "Grace", "last_name": "Hopper"})
	b.createContact(t, map[string]any{"email": "alan@example.com", "first_name": "Alan"})
	run(t, ctx, "processed shown", until(`Number((document.querySelector('tr[data-queue="outbound/hubspot"] td.processed')||{}).textContent) >= 2`))
	run(t, ctx, "throughput chart drawn", until(`document.querySelectorAll('#chart-throughput svg rect').length > 0`))
	run(t, ctx, "budget shown", until(`Number((document.querySelector('#b-used')||{}).textContent) >= 1`))

	// Dead letters: retry one with its button, discard one with a reason,
	// then retry all matching after the confirmation.
	dead := b.deadLetters(t, 4, "dead", "HubSpot said 400: Property values were not valid")
	row := func(id string) string { return `document.querySelector('#dls tr[data-id="` + id + `"]')` }
	run(t, ctx, "dead letters listed",
		chromedp.Navigate(b.base+"/admin/ui/deadletters?direction=outbound&key="+otherKey),
		until(row(dead[0])+` && `+row(dead[3])),
	)
	wouldSend := value(t, ctx, "would send", chromedp.TextContent(chromedp.CSS(`tr[data-id="`+dead[0]+`"] pre.would-send`)))
	if !strings.Contains(wouldSend, `"firstname": "Ada"`) {
		t.Errorf("would-send of an outbound dead letter = %q; want the mapped HubSpot properties", wouldSend)
	}
	run(t, ctx, "retry one",
		chromedp.Click(chromedp.CSS(`tr[data-id="`+dead[0]+`"] button.retry-one`)),
		until(`!`+row(dead[0])+` && !!`+row(dead[1])),
	)
	if s := b.status(t, dead[0]); s != store.StatusPending {
		t.Fatalf("retried dead letter is %s, want pending", s)
	}
	run(t, ctx, "discard one",
		chromedp.Click(chromedp.CSS(`tr[data-id="`+dead[1]+`"] input.pick`)),
		until(`!document.querySelector('#discard-selected').disabled`),
		chromedp.SendKeys(chromedp.CSS(`#discard-reason`), "contact merged away in the app"),
		until(`document.querySelector('#discard-reason').value === "contact merged away in the app"`),
		chromedp.Click(chromedp.CSS(`#discard-selected`)),
		until(`!`+row(dead[1])+` && !!`+row(dead[2])),
		until(`(document.querySelector('#discarded tr[data-id="`+dead[1]+`"] td.reason')||{}).textContent === "contact merged away in the app"`),
	)
	discarded, err := ops.ListDiscarded(context.Background(), b.srv.Store(), 0)
	if err != nil || len(discarded) != 1 || discarded[0].ID != dead[1] || discarded[0].Reason != "contact merged away in the app" {
		t.Fatalf("discarded = %+v, %v; want %s with the reason", discarded, err, dead[1])
	}
	run(t, ctx, "retry all matching",
		chromedp.SetValue(chromedp.CSS(`#f-error`), "not valid"),
		chromedp.Click(chromedp.CSS(`#f-apply`)),
		chromedp.Click(chromedp.CSS(`#retry-all`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		until(`!!document.querySelector('#dls tr.empty')`),
	)
	for _, id := range dead[2:] {
		if s := b.status(t, id); s != store.StatusPending {
			t.Fatalf("dead letter %s is %s after retry all, want pending", id, s)
		}
	}

	// The record page: local fields, the link, HubSpot's properties read on
	// demand, and the record's events.
	run(t, ctx, "record page",
		chromedp.Navigate(b.base+"/admin/ui/record?type=contacts&id="+contact),
		chromedp.WaitVisible(chromedp.CSS(`#r-hubspot-id`)),
		until(`document.querySelectorAll('#r-outbound tbody tr td.processed').length >= 1`),
		chromedp.Click(chromedp.CSS(`#r-read`)),
		until(`(document.querySelector('tr[data-field="first_name"] td.remote')||{}).textContent === "Grace"`),
	)

	// Signing out ends the session in this browser.
	run(t, ctx, "sign out",
		chromedp.Navigate(b.base+"/admin/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#logout`)),
		chromedp.Click(chromedp.CSS(`#logout`)),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.Navigate(b.base+"/admin/ui/deadletters"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
	)
}

// TestScreenshots writes the README's screenshots of the three pages at
// laptop width into $HUBSYNC_SCREENSHOTS (docs/screenshots); it is skipped
// when that is not set.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("HUBSYNC_SCREENSHOTS")
	if dir == "" {
		t.Skip("set HUBSYNC_SCREENSHOTS=docs/screenshots to write the README's screenshots")
	}
	ctx := newBrowser(t, 1366, 900)
	b := startService(t)
	// HubSpot's webhooks of hubsync's own writes come back (as echoes, kept
	// but not applied), so the inbound side has work too.
	if err := b.sim.SetWebhookURL(b.base + inbound.WebhookPath); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, b.base)
	var contact string
	for i, n := range []string{"Grace Hopper", "Alan Turing", "Ada Lovelace", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth"} {
		first, last, _ := strings.Cut(n, " ")
		id := b.createContact(t, map[string]any{"email": strings.ToLower(first) + "@example.com", "first_name": first, "last_name": last, "phone": fmt.Sprintf("+1 555 01%02d", i)})
		if contact == "" {
			contact = id
		}
	}
	b.enqueueOther(t, 3, "pending")
	b.deadLetters(t, 2, "dead", "HubSpot said 400: Property values were not valid: lifecyclestage")
	b.deadLetters(t, 1, "dead-conflict", "HubSpot said 409: Contact already exists")
	gone := b.deadLetters(t, 1, "dead-test", "HubSpot said 400: INVALID_EMAIL")
	if _, err := ops.DiscardDeadLetters(context.Background(), b.srv.Store(), ops.DiscardRequest{Direction: store.DirectionOutbound, IDs: gone, Reason: "test contact from the staging import"}); err != nil {
		t.Fatal(err)
	}
	// HubSpot's side differs on one field, as after an edit not yet synced.
	run(t, ctx, "link", chromedp.Navigate(b.base+"/admin/ui/record?type=contacts&id="+contact), chromedp.WaitVisible(chromedp.CSS(`#r-hubspot-id`)))
	id := value(t, ctx, "hubspot id", chromedp.Text(chromedp.CSS(`#r-hubspot-id`)))
	hs, err := hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Update(context.Background(), "contacts", id, map[string]string{"lastname": "Hopper (Navy)"}); err != nil {
		t.Fatalf("edit on the HubSpot side: %v", err)
	}
	shot := func(name, url, ready string, after ...chromedp.Action[chromedp.Void]) {
		actions := []chromedp.Action[chromedp.Void]{chromedp.Navigate(b.base + url), until(ready)}
		run(t, ctx, name, append(actions, after...)...)
		buf := value(t, ctx, name, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("overview", "/admin/ui/", `Number((document.querySelector('tr[data-queue="outbound/hubspot"] td.processed')||{}).textContent) >= 6 && Number((document.querySelector('tr[data-queue="inbound/hubspot"] td.processed')||{}).textContent) >= 7`)
	shot("deadletters", "/admin/ui/deadletters?direction=outbound&key="+otherKey, `document.querySelectorAll('#dls tbody tr[data-id]').length === 3`,
		chromedp.Click(chromedp.CSS(`#dls tbody tr[data-id] details summary`)))
	shot("record", "/admin/ui/record?type=contacts&id="+contact, `!!document.querySelector('#r-hubspot-id')`,
		until(`document.querySelectorAll('#r-inbound tbody td.processed').length >= 2`),
		chromedp.Click(chromedp.CSS(`#r-read`)), until(`(document.querySelector('tr[data-field="first_name"] td.remote')||{}).textContent === "Grace"`))
}

// TestBrowserPhoneWidth opens the three pages at a phone's width: nothing
// runs off the side of the page (wide tables scroll inside their box) and the
// controls stay usable.
func TestBrowserPhoneWidth(t *testing.T) {
	ctx := newBrowser(t, 1366, 900)
	// A headless window is at least 500 px wide; the viewport emulates the phone.
	run(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b := startService(t)
	contact := b.createContact(t, map[string]any{"email": "grace@example.com", "first_name": "Grace", "last_name": "Hopper"})
	dead := b.deadLetters(t, 1, "dead", "HubSpot said 400: Property values were not valid")
	signIn(t, ctx, b.base)
	fits := until(`window.innerWidth <= 400 && document.documentElement.scrollWidth <= window.innerWidth`)
	run(t, ctx, "overview", until(`!!document.querySelector('tr[data-queue="outbound/`+otherKey+`"]')`))
	run(t, ctx, "overview fits", fits)
	run(t, ctx, "dead letters",
		chromedp.Navigate(b.base+"/admin/ui/deadletters?direction=outbound&key="+otherKey),
		until(`!!document.querySelector('tr[data-id="`+dead[0]+`"]')`), fits,
		chromedp.Click(chromedp.CSS(`tr[data-id="`+dead[0]+`"] button.retry-one`)),
		until(`!!document.querySelector('#dls tr.empty')`),
	)
	run(t, ctx, "record",
		chromedp.Navigate(b.base+"/admin/ui/record?type=contacts&id="+contact),
		chromedp.WaitVisible(chromedp.CSS(`#r-hubspot-id`)), fits,
	)
}
