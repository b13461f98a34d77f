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
// Open a database with Open, apply the schema with Migrate, and enqueue an
// outbound change inside your own transaction with EnqueueTx. A write made while
// applying a change from a source carries WithSyncSource, so it is never sent back
// to that source.
package hubsync
