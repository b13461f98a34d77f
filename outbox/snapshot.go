package outbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Snapshot is the Payload (after) and OldPayload (before) of an outbound event:
// a record as it was at one version. Applications that enqueue their own outbound
// events write this shape, so the outbound worker can diff and map it.
type Snapshot struct {
	// ID is the local record id.
	ID string `json:"id"`
	// Version is the record's version after the change, when it has one.
	Version int64 `json:"version,omitempty"`
	// Fields are the record's fields by local name.
	Fields map[string]any `json:"fields"`
	// Metadata carries MetadataSyncSource, the sync source of the write that
	// produced the event ("" for a local change): anti-loop layer 2.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Marshal encodes the snapshot for an event's Payload.
func (s Snapshot) Marshal() (json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot of %s: %w", s.ID, err)
	}
	return b, nil
}

// ParseSnapshot decodes an event's Payload or OldPayload. A null or empty payload
// gives a nil snapshot.
func ParseSnapshot(b json.RawMessage) (*Snapshot, error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	// Numbers stay json.Number, so an integer beyond 2^53 keeps every digit on
	// its way to HubSpot.
	var s Snapshot
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode snapshot: trailing data after the object")
	}
	if s.Fields == nil {
		s.Fields = map[string]any{}
	}
	return &s, nil
}

// SyncSourced reports whether the snapshot was produced by a sync from
// destination: the outbound worker completes such an event without a call
// (anti-loop layer 3).
func (s *Snapshot) SyncSourced(destination string) bool {
	return s != nil && s.Metadata[MetadataSyncSource] != "" && s.Metadata[MetadataSyncSource] == destination
}
