// Package store defines hubsync's durable queues and the interface every database
// backend implements.
//
// hubsync keeps three tables, as in the Integration Inbox/Outbox design:
//
//   - _System_IntegrationInbound: changes that arrived from an external platform
//     (HubSpot webhooks), consumed by the SyncWorker. Idempotent on IdempotencyKey.
//   - _System_IntegrationOutbound: local record changes to push to an external
//     platform, written in the same transaction as the record change and consumed
//     by the outbound worker.
//   - _System_OutboxEvent: internal record events (record.created/updated/deleted),
//     relayed to in-process subscribers.
//
// The three differ only in their event type: each is a Queue[E] for E one of
// InboundEvent, OutboundEvent and InternalEvent (OutboundRepository and
// InternalRepository are aliases; InboundRepository adds EnqueueBatch). A queue's
// key is the exact Source (inbound) or Destination (outbound); the internal queue
// has none and ignores key arguments. Code that serves every queue alike reads
// events through Event.Header.
//
// Every queue is claimed in batches with a lease: a claim sets the row to
// processing, stamps a lease owner and expiry, and increments Attempt. Attempt is
// the fencing value: every later state change (Complete, Fail, IncrementRetry,
// Release) names the Lease it holds and changes nothing, returning ErrLeaseLost,
// once the lease has expired and another worker has claimed the row again. An
// expired lease makes the row claimable without any sweep.
//
// Events belong to records: (Destination, ObjectType, RecordID) for outbound,
// (ObjectType, RecordID) for internal and (Source, ObjectType, ExternalID) for
// inbound events (a contact and a company with the same external id are two
// records, so one's backoff never holds the other).
//
// # Order
//
// A record's events are ordered by a sequence the database assigns, never by
// a clock. Every enqueue increments its record's counter (table
// hubsync_record_seq, one row per queue and record) with an upsert in the
// enqueueing transaction and stores the new value as the event's Seq. The
// upsert keeps the counter row locked until that transaction ends, so a
// concurrent enqueue of the same record waits for it and then reads the
// committed value: a record's Seqs grow in the order its transactions commit,
// on every replica and across clock steps, while CreatedDate is only the
// enqueueing process's clock. EnqueueBatch takes a whole batch's Seqs with one
// upsert that adds each record's count of events to its counter, locking the
// counters in one fixed order, and gives a record's events the new values in
// batch order. (Two other designs were set aside: an identity
// or auto-increment column is assigned when the row is inserted, not when it
// commits, so under concurrent transactions its order can differ from commit
// order; and the snapshot's record version is the application's, which the
// store cannot guarantee for events it did not write.) Counters are never
// reset, not even by Cleanup, so a record deleted and created again keeps
// counting up. The cost is one counter row per record and queue, and that
// enqueues of one record serialise on it, as its writes usually do already.
//
// Seq never changes. Lane, the event's place in its record's claim order, is
// Seq at enqueue. A record's head is its unfinished (pending or processing)
// event with the lowest Lane. A claim takes up to ClaimParams.Limit heads that
// are due and whose record has no live lease, and in the same transaction the
// events that follow each head in Lane order while they are due, stopping at
// the first one that is not (an event in backoff blocks the ones behind it),
// at most ClaimParams.MaxPerRecord events per record. So a claim returns a
// record's due events together, in Lane order, and may return more than Limit
// events. Different records are interleaved by (CreatedDate, Id) of their
// events (on PostgreSQL, records claimed before first — a lease expired, or
// a head released with a delay, put in backoff or requeued — by the time
// they became due again, then the others by the time they became due: the
// head's NextAttemptDate, which for an event enqueued without a delay is its
// CreatedDate), which only decides which record goes first (fairness), never
// the order within a record. On every backend a record whose head was
// claimed before keeps its place: once due again (its lease expired, its
// worker died; or the delay of a Release or of an IncrementRetry backoff
// ended; or it was requeued) it comes before the records queued after it,
// not behind the backlog queued while it was out. No claim hands out an event of a record while another
// claimer holds a live lease on that record: followers are never heads while
// their head is unfinished, so only the claimer that took the head can take
// them. Failed and processed events do not block their record, nor does an
// inbound event enqueued already processed (QueueState.Status), which takes
// its Seq and never a claim. ClaimIDs takes
// the named events that are heads, each with its due followers as Claim
// does.
//
// Requeue and RequeueAll return a dead letter to pending with a new Lane from
// its record's counter: it goes to the end of its record's lane, behind every
// event the record queued before the requeue committed, and keeps its Seq. A
// later change of the record that was already queued is therefore claimed,
// and finished, before the re-queued one, never at the same time; and the
// consumer still sees by its Seq that it is the older change. The outbound
// worker completes such an event without a call when the state HubSpot
// already has (links.Pushed) comes from a higher Seq, so a re-queued dead
// letter never regresses HubSpot; the pushed state itself only ever moves to
// a higher Seq.
//
// The backends live in subpackages (sqlitestore, pgstore, mysqlstore) and pass one
// conformance suite, storetest.Exercise.
package store
