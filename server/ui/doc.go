// Package ui is the operator dashboard that `hubsync serve` mounts at
// /admin/ui: an overview of the queues, the HubSpot budget and the last hour's
// activity, the dead letters (filter, retry, discard with a reason) and a
// record page (local fields beside HubSpot's, its link and its events).
//
// It is behind the admin token: a sign-in form exchanges the token for a
// session cookie (HttpOnly, SameSite=Strict, Secure over TLS or a trusted
// proxy's https), signed with a key derived from the token, so every replica
// sharing the token accepts it and rotating the token ends every session.
// Every state-changing request carries the session's CSRF token (a header for
// the page's fetches, a form field for the sign-out) and, when the browser
// sends one, a same-origin Origin. Pages, script and styles are embedded:
// nothing is loaded from another site, and the Content-Security-Policy allows
// nothing else.
package ui
