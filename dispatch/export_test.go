package dispatch

import "github.com/hubsync/hubsync/qstash"

// messageFor is the message the publisher sends for c.
func messageFor(p *PublishService, c claimed) qstash.Message {
	return qstash.Message{Destination: p.cfg.WorkerURL, Body: []byte(`{"eventId":"` + c.id + `"}`), DeduplicationID: DedupID(c.id, c.generation),
		FlowControl: p.cfg.FlowControl}
}
