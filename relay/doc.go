// Package relay delivers the internal record events of _System_OutboxEvent
// (record.created/updated/deleted) to in-process subscribers: the ProcessOutbox →
// EventBus path of the Integration Inbox/Outbox design.
//
// A Relay claims events with a lease, hands each to every subscriber of its Bus in
// subscription order, and marks it processed only after all of them succeeded.
// A subscriber error records a retry (with the store's backoff) and the event is
// delivered again later, to every subscriber: delivery is at least once, so
// subscribers must be idempotent. The lease is short (15 s by default) and a
// heartbeat extends the batch's leases every third of it while the batch is
// delivered, however long the subscribers take. A relay that dies mid-batch
// leaves its leases to expire, within a lease; another relay then claims and
// delivers those events again, with those it had delivered but not yet marked
// processed (it marks a batch's delivered events processed together, up to
// 100 in one store call). A relay whose heartbeat finds a lease claimed
// again delivers no more of that batch.
//
// A claim hands out each record's head (its first unfinished event) with the
// record's later events that are already due, in the order the database
// assigned them (store.QueueState.Lane, see the store package), and no other
// claim gets an event of that record meanwhile; the relay keeps that order by
// delivering a batch one event at a time and, when an event fails, holding back
// the later events of its record in the same batch.
//
// A dead letter (an event that failed its last attempt) does not hold back
// its record's later events. Re-queued, it is claimed after them; when one of
// them was delivered already, the relay marks it processed without
// delivering it, so subscribers never see a record go back to an older
// state. Only a re-queued event (its Lane past its Seq) pays that lookup.
//
// A Relay is a service like every hubsync background loop: Start returns at
// once (ErrStarted when running, ErrStopped after Stop), Stop finishes the
// delivery in flight and releases the rest of the batch, a Stop whose context
// ends first (or the end of Start's context) cancels the delivery too, and
// Done is closed once it has stopped. RunOnce runs one cycle by hand.
//
// The relay routes nothing by event type prefix: integration traffic has its own
// queues (_System_IntegrationInbound/Outbound), so every internal event goes to
// every subscriber.
package relay
