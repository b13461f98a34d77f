// Package outbox is the vocabulary an application and hubsync's workers share
// to put a local change on the outbound queue without looping it back to where
// it came from.
//
// EnqueueTx writes an outbound event inside the caller's transaction, so the
// record change and the event commit together (the transactional outbox). The
// event's Payload and OldPayload are Snapshots. A write made while applying a
// change from a source carries WithSyncSource(ctx, source): EnqueueTx skips that
// destination (anti-loop layer 1) and stamps the source into the Snapshot's
// Metadata under MetadataSyncSource (layer 2), where the outbound worker checks it
// again (layer 3, Snapshot.SyncSourced).
//
// The package imports only store and the standard library, so a worker or an
// application that uses it links no database driver. A pgx.Tx is served by
// pgstore.EnqueuePgxTx, which applies the same rules through Prepare.
package outbox
