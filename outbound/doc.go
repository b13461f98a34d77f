// Package outbound pushes local record changes from the outbound queue
// (_System_IntegrationOutbound) to HubSpot: the consumer side of the
// Inbox/Outbox design (seed 000 §4.2, DB polling instead of an in-memory
// accumulator) with the call budget of seed 002.
//
// # A cycle
//
// A Worker claims up to BatchSize events (RunOnce, or ProcessIDs for a push
// dispatcher that names events), looks up the HubSpot ids of their records
// (one query per object type when Links implements BatchLinks), builds a
// Plan and makes its calls, reserving each call's tokens from the shared
// budget right before it (so a call is counted in the window it is made in,
// and must start by the grant's UseBy); a call's new links are stored in one
// transaction. When the window is full, a polling cycle books the next room
// within Config.BudgetAhead (budget.Scheduler), keeps its events and calls at
// the booked instant (unless a 429 paused the budget meanwhile); when the budget refuses (no room that close, or a claim
// by id, which never books), that call's and every later call's events are
// released (no attempt used) until the room is that close; once due again
// they keep their place in the claim order, ahead of the records queued
// since (package store). A started worker
// runs Concurrency such cycles at once, back to back
// while there is work, so that one cycle's database round trips overlap
// another's HubSpot call; the budget, not the number of cycles, holds the
// call rate. Any number of workers in any number of processes cooperate
// through the store's leases; a cycle makes no call that could be answered
// after its lease expires (heartbeats keep the lease, see Leases).
//
// # Other kinds of events (Handlers)
//
// Events whose ObjectType has an entry in Config.Handlers are not records of
// the field mapping: the cycle hands each record's claimed events to that
// Handler (e.g. subscriptions.Pusher for ObjectType "subscriptions"), which
// reserves its calls through the budget it is given and returns an Outcome
// per event (complete, superseded, retry, dead letter, release). The worker
// settles them under the same leases, retry policy and counters as records.
//
// # Coalescing (BuildPlan)
//
// All claimed events of one record become one write of its latest state and
// complete together: create (+updates) → one upsert/create; updates → one
// update of the properties the events changed;
// anything + delete → archive; delete then create → the create (an update of
// the same object when it is still linked). Sync-sourced events (anti-loop
// layer 3) cost no call but keep their place in the order: a property last
// written by one is not echoed back, a local change to another property is
// (see "What a write sends").
// Coalescing needs a claim that hands out several events of a record
// together: the store's claims hand out each record's head with its due
// followers (up to store.ClaimParams.MaxPerRecord); with MaxPerRecord 1 (heads
// only) every change is a write of its own (still batched 100 records to a call).
//
// # Calls
//
// Known HubSpot id → batch update by id. Unknown id with an IDProperty value
// → batch upsert by it: idempotent, so a retry after a lost answer or a crash
// never duplicates the object; two records with the same value never share a
// call. When the value changed after such an attempt (a contact's email), the
// retry first reads by the earlier values (resolve_upsert): an object found is
// the record's, linked and updated by id. Contacts upsert by email; companies and deals by
// mapping.RecordIDProperty ("hubsync_record_id"), whose value is the local
// record id and which the upsert also sends as a property so HubSpot stores
// it. On a real portal that property must exist on companies and deals with
// "unique values" enabled (see package mapping). Unknown id and no
// IDProperty (a mapping without one, or a contact without email) → batch
// create with the record id as objectWriteTraceId. A deleted record → batch
// archive by id; with no link but an IDProperty value, a batch read by that
// property finds the id first (unless the record provably never reached
// HubSpot).
//
// Residual risk, honestly: only a plain create (a mapping without an
// IDProperty) whose answer is lost — a timeout or a dropped connection after
// HubSpot applied it, or a crash between HubSpot's answer and the Link — is
// retried and creates a duplicate. The worker links each created id
// immediately after the call and before it completes anything, which
// narrows but cannot close that window; map a unique IDProperty (or
// mapping.RecordIDField) for every object type.
//
// # Results
//
// Per record: success → link the returned id, then complete every event of
// the record. 409 with "Existing ID" → link that id and release the events;
// the next cycle updates the object by id, so no duplicate is created. A
// whole batch refused for one input's sake (409, 400/422, 404) is halved
// until the culprit stands alone, each half reserving its own call, so one
// bad record never blocks the rest. Validation errors fail (dead-letter) the
// record at once with HubSpot's message. 429, 423, 5xx, timeouts and resets
// → IncrementRetry with at least HubSpot's implied wait; the budget learns
// of a 429 through the client's response hook, so every replica pauses. 404 on an update by id
// first keeps the link and releases the record (no attempt used) for
// NotFoundWaits × Config.NotFoundWait, so that HubSpot's deletion or merge
// of the object, applied through the link, deletes or re-points the record.
// At the start of the wait and before its end it reads the object (one
// call, OpReadGone): a merged-away id reads as its survivor, which lists it
// in hs_merged_object_ids; the merge is then queued
// (Config.OnLinkedMergedAway) and the record waits until it is applied,
// without end. When an upsert's answer resolves several records to one
// object (creates whose answers were lost, whose objects HubSpot then merged
// into each other), the worker reads the history of the object's IDProperty
// (one call, OpReadOwner) and links the record whose value the object held
// before these writes first; the others meet the link conflict. An object that reads as missing after the waits is unlinked
// and retried, so the retry writes it afresh,
// unless the object's tombstone says HubSpot deleted or merged it away (TombstoneLinks):
// the inbound side then deleted or re-pointed the record, and its local
// change completes unwritten (or, re-pointed, is written to the survivor).
// Likewise a record with no link whose last pushed object has such a
// tombstone is not upserted afresh, nor (Config.LocalRecords being a
// SourceDeletedRecords) one HubSpot's deletion or merge deleted here (so
// also one whose object came from HubSpot and was never written). With
// Config.LocalRecords (serve sets the
// records service), an update first drops the fields whose local value
// changed since its event (an applied HubSpot change, or a later local
// write) and, with OwedLinks, owes them to the record's next write (a later
// write that sets one back to the dropped value changes nothing the plan can
// see), and after new links are stored, records deleted while their create
// was in flight get a local-delete tombstone of their object, which their
// deletion then archives (a HubSpot edit or merge applied between the link and
// that check writes the tombstone itself: apply.LocalDeletedClock), and so
// does the object a deleted record's lost create made, found by its id
// property value, once it is archived (a merge into it then takes the merged
// record with it); a
// created object already linked to another record (made from a HubSpot edit
// before the link) is left to it; one HubSpot's merge deleted here while its
// write was under way (the write, an upsert by email, landed on the merge's
// survivor) has the survivor's record written over it again
// (OverwriteRepairer). 401/403 are
// a configuration problem: the events are released for AuthRetryDelay (no
// attempt used), the cycle returns ErrAuth and the worker logs at Error.
// Unexplained failures (decode errors, unknown statuses, a per-input error
// of an unknown category) retry and end as
// dead letters after the store's MaxAttempts. Every answer's rate-limit
// headers go to Budget.Observe through the HubSpot client's OnResponse hook
// (budget.ObserveHubSpot), wired once by the composition for every call.
// Each call's context carries its grant (budget.WithCall), so that its answer
// also tells the budget to count the call from then: a call answered at once
// frees its room up to the call lead sooner.
//
// # What a write sends, and why
//
// An update sends only the fields that the claimed local events themselves
// changed (per event, the mapped properties that differ between its
// OldPayload and Payload), with the values of the latest claimed snapshot.
// It never sends the difference between the last pushed state and the
// record: changes applied from HubSpot (inbound, sync-sourced) produce no
// event for HubSpot and do not update the pushed state, so such a difference
// would echo HubSpot's own changes back, with the local, possibly already
// stale, values (HubSpot sets a name A→B→C, B is applied locally while C is
// in flight, a local phone edit would send name B: permanent divergence).
// HubSpot-originated changes are therefore never echoed back. Two edits of
// the same field, one in HubSpot and one locally, at about the same time,
// remain last-write-wins: whichever reaches the other side last stays.
// Creates and upserts of a record with no link send the full mapped snapshot.
//
// A record whose events were claimed before (Attempt > 1) or failed an
// attempt may have been written by that attempt without the success being
// recorded (a cycle that died, or lost HubSpot's answer, after HubSpot applied
// the write). Its retry does not trust the recorded state: every property its
// local events touch is sent with its latest value, even one equal to the
// value before them, and an upsert or create sends the properties they removed
// as empty, so that it clears what the first attempt may have set. First
// attempts keep the diffing above.
//
// # Dead letters and the pushed state
//
// A change whose events are dead-lettered (failed permanently, or out of
// attempts) would then never reach HubSpot. With Links that implement
// OwedLinks and PushedLinks (*links.Links: hubsync_owed, hubsync_pushed),
// the worker records, when it dead-letters a record's events, the local
// fields that write would have set as owed; the record's next write carries
// them with their latest values, and its success clears them (in the same
// transaction as the link and pushed state). With each success the worker
// also records the state HubSpot now holds of the record (links.Pushed:
// version, fields, event time). A re-queued (or late) event whose version is
// not newer than the pushed state, and that was created no later than it, is
// completed without a call (Summary.Superseded, MetricsSnapshot.Superseded),
// so re-queueing never sets older values again; re-queueing a record's
// newest change sends it. An archive leaves a deletion marker, so a
// re-queued older change of an archived record does not bring it back. A
// pushed state counts only while its HubSpot id is the record's link: a
// re-link to another object (an inbound merge) or an unlink (404) ignores
// it. Snapshots without a Version get event-by-event diffs and no
// superseding.
//
// A link conflict (the HubSpot object a write reached is already linked to
// another local record, e.g. two local contacts with one email) cannot be
// fixed by a retry: the record's events are dead-lettered with a message
// naming both records and the HubSpot id. An upsert has written the record
// over that object first, so the worker also asks LocalRecords (an
// OverwriteRepairer) to write the object's own record over it again, as of
// HubSpot's answer. Most often the upsert was a create's retry after a lost
// answer, and HubSpot had merged the object the first attempt created into
// that one, which keeps its email; the merge's webhook then takes the
// dead-lettered record as merged (apply.UnrecordedWrites), and the records
// service re-queues the dead letter, which goneAtSource completes without a
// call. The same link
// recorded meanwhile by the SyncWorker (it matched the record by its id
// property) is no conflict.
// Other failures to store a link are that record's: its events are retried
// with backoff (an attempt), and the rest of the cycle completes.
//
// # Leases
//
// A claim's lease runs from the start of the claim (the earliest
// LeaseExpiresDate of the claimed events) for LeaseDuration, 15 s by default.
// While the cycle runs, a heartbeat extends the leases of its events every
// LeaseDuration/3 (store ExtendLease, fenced by Attempt), so a live cycle
// keeps them however long it takes. Before each call the worker requires
// Now + HTTPTimeout + a margin for storing the result (HTTPTimeout/2, at most
// 15 s) to be before the lease's expiry, and extends the leases at once when
// it is not; when that fails (the store is unreachable, or a heartbeat found
// an event claimed again) it releases that call's and every later call's
// events, without using an attempt. The call itself runs under its own
// deadline: HTTPTimeout (10 s by default), and never past the lease's expiry
// less the margin, so no answer arrives after another worker could have
// claimed its events again. A replica that dies thus leaves its events
// claimable again within max(LeaseDuration, 1.5 × HTTPTimeout + 1 s), plus
// the wait of a call booked ahead (BudgetAhead): 16–18 s with the defaults.
//
// # Metrics
//
// Metrics holds plain counters (calls by operation and outcome, 429s, budget
// refusals, events completed/skipped/retried/dead/failed/released, coalesced
// events, adoptions, lost leases); read Snapshot to export them.
package outbound
