// Package inbound carries changes from HubSpot into the application's records:
// External → CRM, section 4.1 of the Inbox/Outbox design.
//
// Two pieces, joined by the _System_IntegrationInbound queue (store.InboundRepository):
//
//   - Receiver, the http.Handler for POST /webhooks/hubspot. It verifies HubSpot's
//     signature over the raw body and the public URI before parsing anything,
//     validates the delivery, and stores its valid events in one transaction,
//     answering 2xx only after the commit so HubSpot retries whatever was not kept.
//     An event that is malformed or whose occurredAt is not positive or lies more
//     than MaxEventSkew ahead is refused on its own: logged, counted and kept with
//     its reason in a RejectedLog (hubsync_rejected_webhook), while the rest of
//     the delivery is stored; only a body that is no JSON array is a 400.
//     Echoes of this app's own writes (ReceiverConfig.AppID) are stored already
//     processed, kept for audit, so that no claim ever hands them out.
//     It only stores: no HubSpot call, no record write, so it stays far below
//     HubSpot's 5 s delivery timeout. Under concurrent deliveries it commits in
//     groups: while MaxConcurrentStores transactions run, arriving deliveries
//     wait in order and the next transaction writes them together (up to
//     GroupCommitEvents events), each answered after that commit. A
//     transaction started while another runs passes over, once, the waiting
//     deliveries that share a record with the running one (and those behind
//     them that share a record with a passed one), so that two transactions
//     seldom wait on one record's sequence counter; a failed
//     group is written again one delivery at a time, so one bad delivery fails
//     alone.
//   - Worker (the design's SyncWorker), a service that claims inbound events by
//     Source (exactly, never by prefix), fetches what creation events lack from
//     HubSpot (batched, counted against the shared API budget) and applies each
//     change through an apply.Applier, with the context marked
//     outbox.WithSyncSource(ctx, "hubspot") so that the write is not pushed
//     back to HubSpot (anti-loop, seed §4.3 and §8.2). Like every hubsync
//     service, Start returns at once (ErrStarted when running, ErrStopped after
//     Stop), Stop finishes the cycle in flight, a Stop whose context ends first
//     releases it instead, and RunOnce runs one cycle by hand. The budget learns
//     of each read's rate-limit headers through the HubSpot client's response
//     hook (budget.ObserveHubSpot), not from the worker.
//
// # Stored events
//
// Each webhook event becomes one row: Source "hubspot", ExternalID the objectId,
// ObjectType the local object type of the subscription (mapping.Set.ForWebhook;
// the HubSpot name, e.g. "ticket", when unmapped), EventType from the
// subscription type's suffix (creation→create, propertyChange→update,
// deletion→delete, merge→merge, restore→restore, associationChange→association,
// privacyDeletion→privacy_delete, anything else→EventOther), RawPayload the
// event's JSON exactly as received, and Payload the canonical Event (see Event for
// the JSON shape, version EventVersion).
//
// The IdempotencyKey ("hubspot:" + hex SHA-256) covers what identifies a change,
// not a delivery: portalId, subscriptionType, objectId, eventId, occurredAt,
// propertyName, propertyValue, changeSource, sourceId and the merge and
// association fields. It leaves out attemptNumber, so HubSpot's retries and
// duplicate deliveries map to the same key and are stored once.
//
// # Applying
//
// A claim hands out each record's head (its earliest unfinished event) with
// the record's later events that are already due, all under one lease, and no
// other worker gets any event of that record meanwhile; a record's retried
// event holds back its later ones. Events of one record that come out
// together are applied in occurredAt order, one after another; the events of
// different records are applied concurrently, up to
// WorkerConfig.ApplyConcurrency records at once, each event in its own
// transaction, since an apply's time is round trips and a commit. A merge
// changes records besides its own, so a cycle that holds one applies all its
// events one at a time, in occurredAt order across records. Arrival order is
// not occurrence order, since HubSpot delivers batches concurrently and retries
// them, so correctness rests on the Applier's monotonic guard per record and
// field (in the spirit of seed 002's applied_sequence): a change not newer than
// what was already applied is skipped and reported stale, so out-of-order and
// duplicate deliveries converge on the latest state.
//
// Per event type:
//
//   - create, restore: HubSpot's creation events carry no properties, so the
//     worker reads the objects (≤ 100 ids per BatchRead, one budget token per call)
//     and applies every mapped property, with MatchField/MatchValue set to the
//     object's IDProperty (contacts: email) so that a local record created here and
//     pushed by us is linked, not duplicated. The fetched state is stamped with
//     max(occurredAt, the object's updatedAt), since it reflects every change up
//     to updatedAt. An object that no longer exists is completed as ignored (its
//     deletion event follows).
//   - update: the single mapped property (apply.Change.Partial); an unmapped
//     one is completed as ignored. When no local record is linked to the id
//     (the Applier returns apply.ErrUnlinked), the worker reads the object and
//     applies it like a creation, matched by its IDProperty: most often it is an
//     object we just created, edited in HubSpot before the outbound worker
//     recorded its link (our own creation event is an echo, never applied), and
//     the edit belongs to the record it came from, not to a new record of one
//     property.
//   - merge: Kind merge, ExternalID the surviving id (newObjectId, else
//     primaryObjectId), MergedIDs the others; the Applier re-points the record.
//     HubSpot sends no propertyChange for the values a merge copies into the
//     survivor, so the worker reads the survivor (batched and budgeted like
//     creations) and the merge carries its mapped properties, stamped with
//     the merge's occurredAt. It does so whatever numberOfPropertiesMoved
//     says: a merged record re-pointed to a survivor that had no record here
//     takes the survivor's values. It is matched by its IDProperty too: a
//     survivor we created whose link is not recorded yet (its create's answer
//     was lost) is linked to its record first, and the merged records join
//     that record instead of taking the survivor's object. For contacts the
//     read also asks for hs_additional_emails (apply.Change.MergedMatchValues),
//     which find the record of a merged-away contact we created whose link
//     is not recorded.
//   - delete, privacy_delete: passed on as such; the Applier's documented policy
//     decides between deleting and anonymising.
//   - association and unknown types, unmapped object types: completed without
//     applying, kept for audit. An event stored under an object type the
//     Worker's mapping lacks, but whose webhook name it maps (a Receiver
//     given another mapping, or a type renamed since), is applied as the
//     Worker's mapping says, with one warning.
//   - echoes, events whose changeSource is INTEGRATION or API with sourceId equal
//     to this app's id (our own writes coming back): never applied, kept for
//     audit. The decision needs nothing but the event, so the Receiver makes it
//     at receipt: it marks the payload Echo and stores the row processed
//     (ProcessedDate the time of receipt, Attempt 0), and the Worker never
//     claims it; ReceiverHooks.OnStored counts them. The Worker still checks
//     what it claims (the Echo mark, or its own AppID) and completes an echo
//     as OutcomeEcho without applying: events stored pending before echoes were
//     stored processed, or by a Receiver without an AppID.
//
// Fencing: with an apply.FencedApplier (records.Service), the apply and the
// event's completion are one transaction that first completes the event under
// its lease (store.LeaseOps.CompleteTx); a worker whose lease expired and was
// claimed by another replica rolls back and changes nothing (lease_lost).
// Events whose occurredAt lies more than MaxEventSkew ahead are dead-lettered.
//
// Outcomes: success → Complete; an Applier error matching ErrPermanent, a value
// that does not parse as the mapped field's type or an undecodable payload →
// Fail (dead letter, with the message, re-queueable); anything else →
// IncrementRetry with at least the wait HubSpot asked for; no API budget within
// WorkerConfig.BudgetAhead (a read books the next room when it can wait that
// long), or a 429 pause that began while a booked read waited → Release with
// the budget's wait, which counts no failure. A read's grant goes with its
// call (budget.WithCall), so the budget counts it from its answer.
package inbound
