// Package subscriptions is the ingress of subscription requests: an
// application records that a contact subscribed to, or unsubscribed from, a
// brand's product communications, and hubsync brings HubSpot's communication
// preferences to the state of the newest request, however often the request
// is retried, in whatever order requests arrive, on however many replicas.
//
// A request (POST /api/subscription-requests, see Handler) carries a
// required Idempotency-Key. Store.Submit writes, in one transaction, the
// request row (unique per brand, product and key, with the hash of the
// canonical request), the next sequence of its (brand, product, contact)
// taken from the database, and an outbound event of ObjectType. A retry with
// the same key and body is answered from the stored row; another body under
// the same key is ErrConflict.
//
// The outbound worker hands these events to a Pusher (an outbound.Handler).
// It reads the newest request of the contact and the contact's state
// (contact_subscription_state, advanced only by a conditional update
// "... AND applied_sequence < new"): an event not newer than the state
// completes without a call (superseded), otherwise HubSpot is sent the
// newest request's state, whichever event carried the push.
//
// Requests do not stay forever: Store.Cleanup (run by ops.Cleanup, on
// serve's cleanup schedule) deletes those settled for good (synced or
// superseded) past a retention, but each contact's newest. A retry under a
// deleted request's Idempotency-Key is then a new request.
package subscriptions
