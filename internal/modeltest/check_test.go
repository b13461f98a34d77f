package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hubsync/hubsync/records"
)

// check compares both sides after quiescence and returns every violation.
func (w *world) check() []string {
	ctx := w.ctx
	var bad []string
	for _, typ := range objectTypes {
		obj, _ := w.m.Lookup(typ)
		hs := map[string]map[string]string{}
		for _, o := range w.sim.Objects(typ) {
			hs[o.ID] = o.Properties
		}
		live := map[string]records.Record{}
		for _, rec := range w.liveLocal(typ) {
			live[rec.ID] = rec
		}
		for _, id := range sortedKeys(live) {
			rec := live[id]
			ext, ok, err := w.lk.Lookup(ctx, "hubspot", typ, id)
			if err != nil {
				w.t.Fatal(err)
			}
			props, alive := hs[ext]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("lost: local %s %s has no HubSpot object", typ, id))
				continue
			case !alive && w.deletedHS[ext] != "":
				bad = append(bad, fmt.Sprintf("resurrected: local %s %s is live, its HubSpot object %s was deleted in HubSpot", typ, id, ext))
				continue
			case !alive:
				bad = append(bad, fmt.Sprintf("mismatch: local %s %s is live, its HubSpot object %s is not (merged away: %v)", typ, id, ext, w.mergedHS[ext]))
				continue
			}
			want, err := obj.FromHubSpot(props)
			if err != nil {
				w.t.Fatal(err)
			}
			for _, f := range obj.Fields {
				if got, exp := text(rec.Fields[f.Local]), text(want[f.Local]); got != exp {
					bad = append(bad, fmt.Sprintf("mismatch: %s %s (HubSpot %s) field %s: local %q, HubSpot %q", typ, id, ext, f.Local, got, exp))
				}
			}
		}
		for _, ext := range sortedKeys(hs) {
			id, ok, err := w.lk.LookupRecord(ctx, "hubspot", typ, ext)
			if err != nil {
				w.t.Fatal(err)
			}
			if _, alive := live[id]; ok && alive {
				continue
			}
			if ok && w.deletedLocal[id] != "" {
				bad = append(bad, fmt.Sprintf("resurrected: HubSpot %s %s is live, its local record %s was deleted locally", typ, ext, id))
				continue
			}
			bad = append(bad, fmt.Sprintf("duplicate or lost: HubSpot %s %s is live with no live local record (linked: %v)", typ, ext, ok))
		}
		for id, t := range w.deletedLocal {
			if t != typ {
				continue
			}
			if _, err := w.reps[0].recs.Get(ctx, typ, id); !errors.Is(err, records.ErrNotFound) {
				bad = append(bad, fmt.Sprintf("resurrected: local %s %s was deleted and is back (%v)", typ, id, err))
			}
		}
	}
	// Anti-loop: no outbound event carries a change that came from HubSpot.
	rows, err := w.db.DB.QueryContext(ctx, "SELECT Id, Payload FROM _System_IntegrationOutbound")
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var payload []byte
		if err := rows.Scan(&id, &payload); err != nil {
			w.t.Fatal(err)
		}
		var p struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			bad = append(bad, fmt.Sprintf("outbound event %s: payload is not JSON: %v", id, err))
			continue
		}
		if p.Metadata["sync_source"] == "hubspot" {
			bad = append(bad, fmt.Sprintf("loop: outbound event %s carries a change applied from HubSpot", id))
		}
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return bad
}

// text compares field values by their text; a missing value, nil and ""
// are the same (HubSpot's way to clear a property).
func text(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
