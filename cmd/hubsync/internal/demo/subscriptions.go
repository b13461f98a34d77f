package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// The demo's subscriptions: two products of one brand, mapped to two of the
// simulator's subscription types.
var demoSubscriptions = []mapping.Subscription{
	{BrandID: "demo", ProductID: "newsletter", SubscriptionID: "1"},
	{BrandID: "demo", ProductID: "offers", SubscriptionID: "2"},
}

// subscriptionContacts is how many contacts send subscription requests.
const subscriptionContacts = 15

// SubscriptionReport is the subscription-requests part of the report.
type SubscriptionReport struct {
	// Requests counts requests accepted (201); Replays retries answered with
	// the original request (200, same id); ReplayMismatches retries answered
	// otherwise (must be 0); Conflicts keys reused with another body (409).
	Requests, Replays, ReplayMismatches, Conflicts int64
	// Reordered counts streams whose requests were sent out of their intended order.
	Reordered int64
	// ByStatus counts the requests by sync_status at the end.
	ByStatus map[string]int
	// Contacts counts the (contact, product) pairs compared; Mismatches lists
	// those whose HubSpot status differs from their newest request.
	Contacts   int
	Mismatches []string
	// Skipped, when set, says why the run sent no subscription requests
	// (hubsync chaos drives records only); the part is then not judged.
	Skipped string
}

// OK reports whether every retry was answered with its original, no
// request is left pending, and HubSpot holds every contact's newest request.
func (r SubscriptionReport) OK() bool {
	if r.Skipped != "" {
		return true
	}
	return r.Requests > 0 && r.ReplayMismatches == 0 && r.ByStatus[subscriptions.StatusPending] == 0 && len(r.Mismatches) == 0
}

// subsDriver sends the subscription requests.
type subsDriver struct {
	api   string
	token string // the API's bearer token
	http  *http.Client
	seed  int64

	requests, replays, replayMismatches, conflicts, reordered int64
	mu                                                        sync.Mutex
}

type subStep struct {
	key   string
	body  subscriptions.Request
	retry bool // send again with the same key and body
	twice bool // send the first attempt twice at once
	clash bool // send the key again with the other state
}

// run sends, for every contact and product, 1-4 requests in a stream; some
// streams swap two requests, some requests are retried (one at a time or
// concurrently), some keys are reused with another body.
func (d *subsDriver) run(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(uint64(d.seed), 0x5eed))
	var streams [][]subStep
	for c := range subscriptionContacts {
		for _, sub := range demoSubscriptions {
			n := 1 + rng.IntN(4)
			var steps []subStep
			for i := range n {
				state := subscriptions.StateSubscribed
				if rng.IntN(2) == 0 {
					state = subscriptions.StateUnsubscribed
				}
				steps = append(steps, subStep{
					key:   fmt.Sprintf("demo-%d-%s-%d-%d", c, sub.ProductID, i, d.seed),
					body:  subscriptions.Request{BrandID: sub.BrandID, ProductID: sub.ProductID, ContactKey: fmt.Sprintf("sub-%d@demo.example.com", c), DesiredState: state},
					retry: rng.IntN(10) < 3, twice: rng.IntN(10) < 2, clash: rng.IntN(10) < 2,
				})
			}
			if n > 1 && rng.IntN(3) == 0 { // the client sends two requests in swapped order
				i := rng.IntN(n - 1)
				steps[i], steps[i+1] = steps[i+1], steps[i]
				d.reordered++
			}
			streams = append(streams, steps)
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(streams))
	sem := make(chan struct{}, 4)
	for _, steps := range streams {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, s := range steps {
				if err := d.step(ctx, s); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

func (d *subsDriver) step(ctx context.Context, s subStep) error {
	var first string
	if s.twice {
		var wg sync.WaitGroup
		ids := make([]string, 2)
		codes := make([]int, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { codes[i], ids[i], errs[i] = d.post(ctx, s.key, s.body) })
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				return errs[i]
			}
		}
		if !(codes[0] == 201 && codes[1] == 200 || codes[0] == 200 && codes[1] == 201) || ids[0] != ids[1] {
			d.count(&d.replayMismatches)
		} else {
			d.count(&d.replays)
		}
		d.count(&d.requests)
		first = ids[0]
	} else {
		code, id, err := d.post(ctx, s.key, s.body)
		if err != nil {
			return err
		}
		if code != http.StatusCreated {
			return fmt.Errorf("demo: subscription request %s answered %d", s.key, code)
		}
		d.count(&d.requests)
		first = id
	}
	if s.retry {
		code, id, err := d.post(ctx, s.key, s.body)
		if err != nil {
			return err
		}
		if code == http.StatusOK && id == first {
			d.count(&d.replays)
		} else {
			d.count(&d.replayMismatches)
		}
	}
	if s.clash {
		other := s.body
		other.DesiredState = map[string]string{subscriptions.StateSubscribed: subscriptions.StateUnsubscribed, subscriptions.StateUnsubscribed: subscriptions.StateSubscribed}[other.DesiredState]
		code, _, err := d.post(ctx, s.key, other)
		if err != nil {
			return err
		}
		if code == http.StatusConflict {
			d.count(&d.conflicts)
		} else {
			d.count(&d.replayMismatches)
		}
	}
	return nil
}

func (d *subsDriver) count(n *int64) {
	d.mu.Lock()
	*n++
	d.mu.Unlock()
}

func (d *subsDriver) post(ctx context.Context, key string, r subscriptions.Request) (int, string, error) {
	body, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.api+subscriptions.RequestsPath, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set(subscriptions.IdempotencyKeyHeader, key)
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("demo: subscription request: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		ID string `json:"id"`
	}
	json.Unmarshal(b, &out) //nolint:errcheck // a 409's body has no id
	return resp.StatusCode, out.ID, nil
}

// collectSubscriptions compares every contact's newest request with
// HubSpot's status and counts the requests by status.
func collectSubscriptions(ctx context.Context, d *subsDriver, st store.Store, sim *hubspotsim.Server) (SubscriptionReport, error) {
	rep := SubscriptionReport{Requests: d.requests, Replays: d.replays, ReplayMismatches: d.replayMismatches,
		Conflicts: d.conflicts, Reordered: d.reordered, ByStatus: map[string]int{}}
	rows, err := st.DB().QueryContext(ctx, "SELECT sync_status, COUNT(*) FROM subscription_requests GROUP BY sync_status")
	if err != nil {
		return rep, fmt.Errorf("demo: subscription statuses: %w", err)
	}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return rep, err
		}
		rep.ByStatus[s] = n
	}
	rows.Close()
	ss := subscriptions.NewStore(st)
	for c := range subscriptionContacts {
		email := fmt.Sprintf("sub-%d@demo.example.com", c)
		for _, sub := range demoSubscriptions {
			newest, err := ss.Newest(ctx, sub.BrandID, sub.ProductID, email)
			if errors.Is(err, subscriptions.ErrNotFound) {
				continue // the run ended before this contact's first request
			}
			if err != nil {
				return rep, err
			}
			rep.Contacts++
			want := "SUBSCRIBED"
			if newest.DesiredState == subscriptions.StateUnsubscribed {
				want = "UNSUBSCRIBED"
			}
			var id int64
			fmt.Sscan(sub.SubscriptionID, &id) //nolint:errcheck // the mapping above is numeric
			if got := sim.SubscriptionStatus(email, id); got != want || newest.SyncStatus != subscriptions.StatusSynced {
				rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s %s: newest request %s (sequence %d, %s), HubSpot %s",
					email, sub.ProductID, newest.DesiredState, newest.AppliedSequence, newest.SyncStatus, got))
			}
		}
	}
	return rep, nil
}

// writeSubscriptions prints the subscription part of the report.
func (r SubscriptionReport) write(p func(string, ...any)) {
	p("")
	if r.Skipped != "" {
		p("subscription requests: not part of this run (%s)", r.Skipped)
		return
	}
	p("subscription requests: %d accepted, %d retries answered with the original (200), %d keys reused with another body refused (409), %d streams sent reordered",
		r.Requests, r.Replays, r.Conflicts, r.Reordered)
	p("  by sync_status: synced %d, superseded %d (their events completed without a HubSpot call), failed %d, pending %d",
		r.ByStatus[subscriptions.StatusSynced], r.ByStatus[subscriptions.StatusSuperseded], r.ByStatus[subscriptions.StatusFailed], r.ByStatus[subscriptions.StatusPending])
	if r.ReplayMismatches > 0 {
		p("  RETRIES NOT ANSWERED WITH THEIR ORIGINAL: %d", r.ReplayMismatches)
	}
	p("  %d contact subscriptions compared: %d equal to the newest request in HubSpot", r.Contacts, r.Contacts-len(r.Mismatches))
	for i, m := range r.Mismatches {
		if i == 20 {
			p("  … and %d more", len(r.Mismatches)-20)
			break
		}
		p("  MISMATCH %s", m)
	}
}
