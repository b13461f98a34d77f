package hubspotsim

import (
	"slices"
	"time"
)

// version is one value a property had: what propertiesWithHistory returns.
type version struct {
	value string
	at    time.Time
	src   source
}

// versionJSON is a version as HubSpot writes it in propertiesWithHistory.
type versionJSON struct {
	Value      string `json:"value"`
	Timestamp  string `json:"timestamp"`
	SourceType string `json:"sourceType"`
	SourceID   string `json:"sourceId,omitempty"`
}

// record appends a version of property k; systemProps keep none.
func (o *object) record(k, v string, at time.Time, src source) {
	if systemProps[k] {
		return
	}
	if o.history == nil {
		o.history = map[string][]version{}
	}
	o.history[k] = append(o.history[k], version{value: v, at: at, src: src})
}

// withHistory adds, to each rendered result, the versions of the properties
// named in names, newest first, as HubSpot's propertiesWithHistory.
func withHistory(ts *typeStore, results []objectJSON, names []string) {
	if len(names) == 0 {
		return
	}
	names = readProps(ts.name, names)
	for i := range results {
		o := ts.objs[results[i].idNum()]
		if o == nil {
			continue
		}
		h := map[string][]versionJSON{}
		for _, k := range names {
			vs := o.history[k]
			list := make([]versionJSON, 0, len(vs))
			for _, v := range slices.Backward(vs) {
				list = append(list, versionJSON{Value: v.value, Timestamp: fmtTime(v.at), SourceType: v.src.changeSource, SourceID: v.src.sourceID})
			}
			h[k] = list
		}
		results[i].History = h
	}
}

// WebhookSwitch is the webhook control of SetWebhooks.
type WebhookSwitch struct {
	// Paused stops webhooks: events of changes made while paused are never
	// sent, as when an app's subscription is paused in HubSpot.
	Paused bool `json:"paused"`
	// DropNext drops the next DropNext events, as HubSpot does with the
	// deliveries it gives up on.
	DropNext int `json:"dropNext"`
}

// SetWebhooks pauses or resumes webhooks and sets how many of the next
// events are dropped. Suppressed events are counted in
// Counters.WebhooksSuppressed.
func (s *Server) SetWebhooks(w WebhookSwitch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.whPaused = w.Paused
	s.whDropNext = max(w.DropNext, 0)
}

// suppressLocked reports whether an event about to be queued goes missing.
func (s *Server) suppressLocked() bool {
	switch {
	case s.whPaused:
	case s.whDropNext > 0:
		s.whDropNext--
	default:
		return false
	}
	s.counters.WebhooksSuppressed++
	return true
}
