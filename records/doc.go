// Package records is hubsync's own CRM record store: generic records per object
// type (contacts, companies, deals and user-defined types) with JSON fields, a
// version and timestamps, in the hubsync_record table of migration 002.
//
// Every write (Insert, Update, Delete, and Apply for inbound changes) runs in one
// transaction that changes the record row, enqueues one internal
// record.created/updated/deleted event (_System_OutboxEvent) and one outbound
// event (_System_IntegrationOutbound) per configured destination, with
// outbox.Snapshot payloads. A write made under outbox.WithSyncSource(ctx, d) is
// not enqueued for destination d (anti-loop), but still for the others and still
// internally, and its snapshots carry the source in their metadata.
//
// Updates and deletes carry the version the caller read; a stale one fails with
// ErrConflict. The row is changed before the events are inserted, so the row lock
// orders concurrent writers' events in commit order.
//
// A transaction the database rolls back as transient (a deadlock, a
// serialization failure or a lock wait timeout: store.Store.Retryable) is run
// again whole, up to dialectsql.RetryAttempts times, after short random waits;
// what it did the first time was rolled back, and the write's span links only
// to the outbound events of the attempt that committed. A fence's
// store.ErrLeaseLost is never retried.
//
// Service implements apply.Applier with apply.Guarded over its tables: a
// per-field monotonic guard, per-external-id tombstones for deleted and
// merged-away ids (links.Tombstone) and merge redirects, so late, older changes
// never resurrect a record (see Service.Apply). Its local writes advance the
// same field clocks. A source's change that deletes a record (a deletion, or
// a merge that takes it away) re-queues the record's dead letters in that
// source's queue once its transaction commits: the outbound worker resolves
// them as changes the deletion overtook, and no operator is asked to decide
// a moot failure. A privacy deletion re-queues none.
//
// Handler serves the JSON HTTP API.
package records
