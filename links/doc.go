// Package links stores the link between a local record and its id on each
// destination ("hubspot" contact 1234 is local contact 0190...), in the
// hubsync_link table of migration 002.
//
// A link is unique both ways per destination and object type: a local record has
// at most one external id, and an external id belongs to at most one local
// record. The outbound worker calls Link after it created an object remotely and
// Lookup before it updates or deletes one; the records service calls the Tx
// variants inside its own transactions. Links work on any store.Store, so an
// application that owns its schema can use them too (after running hubsync's
// migrations).
//
// A link is kept when its local record is deleted: the delete still has to reach
// the destination, and a late event for the external id must still be recognised.
package links
