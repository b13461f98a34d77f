// Package hubsync keeps an application's own database and HubSpot in sync in both
// directions without losing, duplicating or looping a change.
//
// Changes from HubSpot arrive as signed webhooks and are stored in the inbound
// queue (_System_IntegrationInbound) before they are acknowledged; a SyncWorker
// applies them to local records. Local changes are written to the outbound queue
// (_System_IntegrationOutbound) in the same transaction as the record change; an
// outbound worker pushes them to HubSpot in batches within a shared API budget.
// Internal record events go through _System_OutboxEvent to in-process subscribers.
//
// This package is the facade that opens a database: Open (or NewStore over an
// open *sql.DB), Migrate and CheckSchema. It imports every backend and its
// driver; the workers do not import it. The vocabulary of the data path lives
// in leaf packages: outbox (EnqueueTx, Snapshot, WithSyncSource) to enqueue an
// outbound change inside your own transaction, pgstore.EnqueuePgxTx for a
// pgx.Tx, and apply for an Applier of inbound changes to your own tables.
package hubsync
