// Package dispatch is hubsync's second way of dispatching outbound events
// (server.Config.Dispatch "qstash"): instead of outbound workers polling the queue,
// a Publisher hands each due event to Upstash QStash, which delivers it, at
// least once and under flow control, to the signed worker endpoint
// (Handler, POST /qstash/hubspot) of any replica.
//
// # Publish
//
// The Publisher claims due, unpublished outbound events that are their
// record's head (no earlier unfinished event of the record) in batches
// (PublishStatus 'publishing' with a publish lease; FOR UPDATE SKIP LOCKED
// on PostgreSQL and MySQL) and publishes {"eventId": id} with the
// deduplication id DedupID(id, generation): the event id for the first
// publish. On success it stores the message id and the publish date
// (PublishStatus 'published') and leaves the event pending: nothing
// publishes it again until the reconciliation sweep says so. A failed
// publish backs off ('publish_retry', RetryPolicy). A crash between the
// publish and the mark leaves the publish lease to expire, and the next
// claim publishes again with the same deduplication id, which QStash drops
// within its window. A dead letter re-queued since its publish (its Lane
// changed) is published again under the next generation. The queue's own
// lease columns are never touched by the Publisher.
//
// # Deliver
//
// The Handler verifies Upstash-Signature on the raw body (at most
// MaxBodyBytes) before parsing it; any failure answers 401 and stores
// nothing. It then claims the event by id with the ordinary lease claim and
// pushes it with the outbound worker (outbound.Worker.ProcessIDs): the same
// plan, budget, fencing, retry policy and dead letters as poll mode. An event
// already processed (or dead-lettered, or unknown) answers 200 at once: a
// duplicate or late delivery is a no-op. A budget refusal releases the event
// (no attempt used) and answers 503 with Retry-After; a HubSpot failure that
// will be retried answers 503 with the wait until the event's next attempt;
// a permanent failure dead-letters the event and answers 489 with
// Upstash-NonRetryable-Error: true.
//
// Per-record order and coalescing: only record heads are published, and the
// claim by id hands a head out with its record's due followers (as poll
// mode's claim does, up to store.ClaimParams.MaxPerRecord), so one delivery
// pushes a record's pending changes together, coalesced into one write in
// Lane order; a follower's own later delivery, if it was published at all,
// finds it processed. Should an event still be delivered while its record has
// an earlier unfinished event (a re-publish, an event published before an
// earlier one was re-queued), it is never applied first: the Handler pushes
// the record's head, which takes the delivered event along when it is due;
// when an earlier event is held by another delivery or waits for its retry,
// it answers 503 with Retry-After so that QStash delivers again later.
// Records are not batched together: each delivery is one record's write.
//
// # Reconcile
//
// Rescheduler is the sweep's repair in qstash mode (ops.Scheduler): an
// unfinished event published at least the sweep's age ago is published again
// under the next generation's deduplication id, which cannot collide with
// the original's; if the original is delivered late after all, the event is
// found processed and the delivery is a no-op. An expired lease is released
// first.
package dispatch
