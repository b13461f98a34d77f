package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// localLanes is how many local writers run at once; one record's steps always
// go through one lane, in order.
const localLanes = 4

// hubspotStepGap spaces HubSpot user edits, so that two edits of one record
// never share a millisecond (webhook occurredAt has millisecond precision).
const hubspotStepGap = 3 * time.Millisecond

// gatePoll is how often the HubSpot driver checks whether a record it is about
// to edit has reached HubSpot.
const gatePoll = 50 * time.Millisecond

// driver runs a workload: local steps through the records HTTP API, HubSpot
// steps through the simulator's user-edit methods.
type driver struct {
	w       Workload
	api     string // base URL of the service
	token   string // bearer token of the records API
	http    *http.Client
	sim     *hubspotsim.Server
	st      store.Store
	links   *links.Links
	queries *queries

	mu        sync.Mutex
	localID   []string // by ref
	version   []int64  // by ref
	hubspotID []string // by ref, for HubSpot-created records
	skipped   map[int]string

	localDone   atomic.Int64
	hubspotDone atomic.Int64
	conflicts   atomic.Int64

	// retryUnavailable, set by the chaos run, retries a records API call that
	// met a 5xx or no answer (a replica killed, the database restarting); see
	// call.
	retryUnavailable bool
	retries          atomic.Int64
}

func newDriver(w Workload, api, token string, sim *hubspotsim.Server, st store.Store, q *queries) *driver {
	n := len(w.Records)
	return &driver{
		w: w, api: api, token: token, sim: sim, st: st, links: links.New(st), queries: q,
		http:    &http.Client{Timeout: 30 * time.Second},
		localID: make([]string, n), version: make([]int64, n), hubspotID: make([]string, n),
		skipped: map[int]string{},
	}
}

// runLocal applies the local steps over localLanes concurrent writers.
func (d *driver) runLocal(ctx context.Context) error {
	lanes := make([][]Op, localLanes)
	for _, op := range d.w.Local {
		lanes[op.Ref%localLanes] = append(lanes[op.Ref%localLanes], op)
	}
	errs := make(chan error, localLanes)
	for _, ops := range lanes {
		go func() {
			for _, op := range ops {
				if err := d.local(ctx, op); err != nil {
					errs <- fmt.Errorf("%v of workload record %d: %w", op.Kind, op.Ref, err)
					return
				}
				d.localDone.Add(1)
			}
			errs <- nil
		}()
	}
	var first error
	for range lanes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

type recordJSON struct {
	ID      string         `json:"id"`
	Version int64          `json:"version"`
	Fields  map[string]any `json:"fields"`
}

// errConflict is a 409 from the records API.
var errConflict = errors.New("version conflict")

func (d *driver) local(ctx context.Context, op Op) error {
	t := d.w.Records[op.Ref].ObjectType
	d.mu.Lock()
	id, ver := d.localID[op.Ref], d.version[op.Ref]
	d.mu.Unlock()
	var (
		rec recordJSON
		err error
	)
	switch op.Kind {
	case LocalCreate:
		rec, err = d.call(ctx, http.MethodPost, "/api/records/"+t, map[string]any{"fields": op.Fields})
	case LocalUpdate:
		for attempt := 0; ; attempt++ {
			rec, err = d.call(ctx, http.MethodPatch, "/api/records/"+t+"/"+id, map[string]any{"version": ver, "fields": op.Fields})
			if !errors.Is(err, errConflict) || attempt == 3 {
				break
			}
			// Someone else wrote the record (nothing in this workload should):
			// count it, read the version and try again.
			d.conflicts.Add(1)
			cur, gerr := d.call(ctx, http.MethodGet, "/api/records/"+t+"/"+id, nil)
			if gerr != nil {
				return gerr
			}
			ver = cur.Version
		}
	case LocalDelete:
		_, err = d.call(ctx, http.MethodDelete, fmt.Sprintf("/api/records/%s/%s?version=%d", t, id, ver), nil)
		rec = recordJSON{ID: id}
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.localID[op.Ref], d.version[op.Ref] = rec.ID, rec.Version
	d.mu.Unlock()
	return nil
}

// call makes one records API request and decodes the record it answers.
// With retryUnavailable it tries again, for a while, after a 5xx or a failed
// request: a PATCH that had in fact been applied then meets a 409 and is
// re-read and re-applied (the same values), and a DELETE that had been applied
// meets a 404, which counts as done.
func (d *driver) call(ctx context.Context, method, path string, body any) (recordJSON, error) {
	if !d.retryUnavailable {
		rec, _, err := d.callOnce(ctx, method, path, body)
		return rec, err
	}
	for attempt := 0; ; attempt++ {
		rec, unavailable, err := d.callOnce(ctx, method, path, body)
		if attempt > 0 && method == http.MethodDelete && errors.Is(err, errNotFound) {
			return recordJSON{}, nil
		}
		if !unavailable || attempt == retryUnavailableMax {
			return rec, err
		}
		d.retries.Add(1)
		select {
		case <-ctx.Done():
			return rec, err
		case <-time.After(retryUnavailableWait):
		}
	}
}

// How often and how long call retries an unavailable records API.
const (
	retryUnavailableMax  = 600
	retryUnavailableWait = 100 * time.Millisecond
)

// errNotFound is a 404 from the records API.
var errNotFound = errors.New("not found")

func (d *driver) callOnce(ctx context.Context, method, path string, body any) (_ recordJSON, unavailable bool, _ error) {
	rec, err := d.do(ctx, method, path, body)
	var se statusError
	if errors.As(err, &se) {
		return rec, se.code >= 500, err
	}
	return rec, err != nil && !errors.Is(err, errConflict) && !errors.Is(err, errNotFound) && ctx.Err() == nil, err
}

// statusError is an answer of 300 or more other than 404 and 409.
type statusError struct {
	code int
	msg  string
}

func (e statusError) Error() string { return e.msg }

func (d *driver) do(ctx context.Context, method, path string, body any) (recordJSON, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return recordJSON{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.api+path, rd)
	if err != nil {
		return recordJSON{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.http.Do(req)
	if err != nil {
		return recordJSON{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusConflict:
		return recordJSON{}, fmt.Errorf("%s %s: %w: %s", method, path, errConflict, b)
	case resp.StatusCode == http.StatusNotFound:
		return recordJSON{}, fmt.Errorf("%s %s: %w: %s", method, path, errNotFound, b)
	case resp.StatusCode >= 300:
		return recordJSON{}, statusError{resp.StatusCode, fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))}
	case resp.StatusCode == http.StatusNoContent || len(b) == 0:
		return recordJSON{}, nil
	}
	var rec recordJSON
	if err := json.Unmarshal(b, &rec); err != nil {
		return recordJSON{}, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return rec, nil
}

// runHubSpot applies the HubSpot user edits in order. An edit of a record
// created locally waits until that record has reached HubSpot; if it never
// can (its create is a dead letter), the record's HubSpot edits are skipped.
func (d *driver) runHubSpot(ctx context.Context) error {
	for _, op := range d.w.HubSpot {
		if err := d.hubspot(ctx, op); err != nil {
			return fmt.Errorf("%v of workload record %d: %w", op.Kind, op.Ref, err)
		}
		d.hubspotDone.Add(1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(hubspotStepGap):
		}
	}
	return nil
}

func (d *driver) hubspot(ctx context.Context, op Op) error {
	t := d.w.Records[op.Ref].ObjectType
	if op.Kind == HubSpotCreate {
		id, err := d.sim.UserCreate(t, op.Props)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.hubspotID[op.Ref] = id
		d.mu.Unlock()
		return nil
	}
	d.mu.Lock()
	_, skip := d.skipped[op.Ref]
	d.mu.Unlock()
	if skip {
		return nil
	}
	id, ok, err := d.gate(ctx, op.Ref)
	if err != nil || !ok {
		return err
	}
	switch op.Kind {
	case HubSpotUpdate:
		return d.sim.UserUpdate(t, id, op.Props)
	case HubSpotDelete:
		return d.sim.UserDelete(t, id)
	case HubSpotMerge:
		other, ok, err := d.gate(ctx, op.Merged)
		if err != nil || !ok {
			return err
		}
		return d.sim.UserMerge(t, id, other)
	}
	return fmt.Errorf("unexpected step %v", op.Kind)
}

// gate waits until the record has reached the other side and returns its
// HubSpot id: for a record created locally, its outbound events are done and
// it is linked; for one created in HubSpot, a local record is linked to it
// and holds its values. ok is false when the record cannot get there (a dead
// letter), and its HubSpot edits are then skipped.
func (d *driver) gate(ctx context.Context, ref int) (string, bool, error) {
	spec := d.w.Records[ref]
	for {
		d.mu.Lock()
		localID, hsID := d.localID[ref], d.hubspotID[ref]
		d.mu.Unlock()
		switch spec.Partition {
		case PartitionHubSpotCreated:
			if _, linked, err := d.links.LookupRecord(ctx, "hubspot", spec.ObjectType, hsID); err != nil {
				if !d.retryUnavailable {
					return "", false, err
				}
			} else if linked {
				return hsID, true, nil
			}
		default:
			if localID != "" {
				open, failed, err := d.queries.recordOutbound(ctx, spec.ObjectType, localID)
				if err != nil {
					if !d.retryUnavailable {
						return "", false, err
					}
					open = 1 // the database is restarting: ask again
				}
				if failed > 0 {
					d.mu.Lock()
					d.skipped[ref] = "its create is a dead letter"
					d.mu.Unlock()
					return "", false, nil
				}
				if open == 0 {
					id, linked, err := d.links.Lookup(ctx, "hubspot", spec.ObjectType, localID)
					if err != nil && !d.retryUnavailable {
						return "", false, err
					}
					if linked {
						return id, true, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", false, fmt.Errorf("waiting for %s record %d to reach the other side: %w", spec.ObjectType, ref, ctx.Err())
		case <-time.After(gatePoll):
		}
	}
}

// targets returns where each workload record ended up, by ref.
func (d *driver) targets() []Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Target, len(d.w.Records))
	for i := range out {
		out[i] = Target{LocalID: d.localID[i], HubSpotID: d.hubspotID[i]}
	}
	return out
}
