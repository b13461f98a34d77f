// Package drift finds and repairs drift between hubsync's records and
// HubSpot: the differences no queue sees, left by webhooks HubSpot gave up
// on (or never sent, such as properties moved by a merge), edits made while
// the app's subscription was paused, imports and workflows, a restore from
// backup on either side, or a row changed behind the records API.
//
// A Scanner walks the local records of each mapped object type in pages,
// each page one HubSpot batch read of the mapped properties with
// propertiesWithHistory, reserved from the shared budget (pass a
// *budget.Share to cap the scan at a share of each window, so that the
// sync's own calls always find room). After each page it stores a cursor in
// hubsync_drift_cursor: a scan that is stopped or killed is resumed by the
// next Run. Records with a change in flight (an outbound or inbound event
// pending or processing) are skipped: the queues carry them. It also finds
// local records with no link (and nothing queued for HubSpot), linked
// objects gone from HubSpot, and HubSpot objects no record is linked to
// whose id property (hubsync_record_id, or the mapped one such as email)
// names no local record: orphans. For an object type upserted by email it
// reads hs_additional_emails too, and makes each linked record hold the
// emails HubSpot keeps on its contact besides its own
// (records.Service.HoldEmails): merges applied before hubsync kept them, or
// whose webhook never came, would otherwise let a new record's upsert write
// over the survivor.
//
// # Verdicts
//
// Each differing field gets a verdict from the local field clock and
// HubSpot's property history, never a guess: HubSpot still holding
// hubsync's own write means the local side changed since (LocalNewer); the
// local value being an older HubSpot value, not rewritten since, means only
// HubSpot changed (HubSpotNewer); anything else — both changed since they
// last agreed, values that never agreed, no clock — is Ambiguous. An
// ambiguous difference is reported and left alone unless the object's
// Policy says which side wins (hubspot_wins, local_wins, newest_wins);
// report_only repairs nothing at all.
//
// # Repairs
//
// Nothing is written to either side directly. A local-newer difference
// becomes an outbound update event (records.Service.Resend: the record's
// state, with HubSpot's current values as the "before" state, in the
// record's own order); the outbound worker sends it. A HubSpot-newer one
// becomes an inbound property change (an orphan: an inbound creation) with
// HubSpot's timestamp and a synthetic idempotency key; the SyncWorker
// applies it under the monotonic guard, in order, fenced by its lease, and
// with the sync-source marker, so nothing loops back. A dry run reports
// what it would do and enqueues nothing.
//
// # Report
//
// A Report counts every difference by object type, key and verdict, and
// lists the first Config.MaxDifferences of them (MaxDifferencesDefault);
// those past the limit are counted (Report.Omitted) and repaired as the
// listed ones are; a listed difference shows at most ListedValueMax bytes
// of each value, and MaxDifferencesMax bounds the limit. A drift that
// touches every record, such as a mapping change, thus makes a report of
// bounded size, not one entry per record and field.
package drift
