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
// Every queue is claimed in batches with a lease: a claim sets the row to
// processing, stamps a lease owner and expiry, and increments Attempt. Attempt is
// the fencing value: every later state change (Complete, Fail, IncrementRetry,
// Release) names the Lease it holds and changes nothing, returning ErrLeaseLost,
// once the lease has expired and another worker has claimed the row again. An
// expired lease makes the row claimable without any sweep.
//
// A claim never hands out an event of a record while another event of the same
// record is leased, and hands out the events of one record in creation order:
// (ObjectType, RecordID) for outbound and internal events, (Source, ExternalID)
// for inbound ones.
//
// The backends live in subpackages (sqlitestore, pgstore, mysqlstore) and pass one
// conformance suite, storetest.Exercise.
package store
