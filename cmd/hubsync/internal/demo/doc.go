// Package demo runs hubsync's two-way sync demo: the HubSpot simulator and the
// hubsync service on SQLite in a temporary directory, a realistic workload
// driven against both sides, live progress, and a consistency report that
// compares every local record with its HubSpot object.
//
// `hubsync demo` is a thin wrapper around Run; the tests run it at a small size.
//
// # Workload
//
// Generate builds the workload from a seed, so a run can be repeated. Local
// changes (creates, updates with hot records updated many times in a row,
// deletes) go through the records API; HubSpot-side user edits (updates,
// creates, deletes and one merge of two contacts) go through the simulator and
// reach the service as signed webhooks. Concurrent edits of the same field on
// both sides within the sync latency may legitimately end differently on each
// side (the last write to reach HubSpot wins there, the newest occurredAt
// locally), so the workload partitions the records: a record is edited either
// locally or in HubSpot, never both at once. Records edited in HubSpot were
// created locally and are edited there only after they reached HubSpot.
//
// # Report
//
// Compare is a pure function over the local records (with their HubSpot ids)
// and the simulator's objects: every live local record must have a live HubSpot
// object with equal mapped properties, every live HubSpot object a live local
// record, and the workload's own expectations (the values it wrote last, the
// records it deleted) must hold on both sides. When both sides first settle,
// the run reports the dead letters (the injected VALIDATION_ERRORs) with their
// messages, clears the faults, re-queues them through ops.RetryDeadLetters
// (the path of `hubsync dlq retry`) and waits to settle again; only then does
// it compare. CONSISTENT means every live record equal with no exception, no
// dead letter left and no loop.
package demo
