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
// (ObjectType, RecordID) for internal and (Source, ExternalID) for inbound events.
// A record's head is its earliest unfinished (pending or processing) event. A
// claim takes up to ClaimParams.Limit heads that are due and whose record has no
// live lease, and in the same transaction the events that follow each head
// (CreatedDate, Id order) while they are due, stopping at the first one that is
// not (an event in backoff blocks the ones behind it), at most
// ClaimParams.MaxPerRecord events per record. So a claim returns a record's due
// events together, in order, and may return more than Limit events; results are
// ordered by (CreatedDate, Id). No claim hands out an event of a record while
// another claimer holds a live lease on that record: followers are never heads
// while their head is unfinished, so only the claimer that took the head can take
// them. Failed and processed events do not block their record. ClaimIDs takes only
// the named events that are heads.
//
// Requeue of a dead letter returns it to pending in its original place. If it is
// requeued while a later event of its record is being claimed (PostgreSQL, MySQL;
// SQLite has one writer and no such race), both can be out at once: the claim's
// snapshot still saw the dead letter as failed. Handing out followers does not
// widen this: whoever claims the requeued event cannot take the other claimer's
// events as its followers, so each event still goes out once. Requeue dead
// letters of records that have nothing in flight, or accept a short overlap.
//
// The backends live in subpackages (sqlitestore, pgstore, mysqlstore) and pass one
// conformance suite, storetest.Exercise.
package store
