// Package hubspotsim is an in-process simulator of the parts of HubSpot's HTTP
// API that hubsync uses: CRM v3 objects (single, batch, search, merge),
// property definitions, communication preferences (v3 and v4), rate limits,
// webhooks with v3 signatures, and injectable faults.
//
// The simulator is an independent implementation of HubSpot's documented
// behaviour (see shared/reference/hubspot.md); it deliberately does not reuse
// the request handling of package hubspot, so that it can catch bugs in that
// client. It only shares the webhook event type and the signing function.
//
// # Behaviour worth knowing
//
//   - Every API request needs "Authorization: Bearer <Config.AccessToken>";
//     anything else gets 401 with category INVALID_AUTHENTICATION.
//   - Reads (single GET, list, batch read, search) return only the requested
//     properties, or HubSpot's small default set when none are requested
//     (contacts: email, firstname, lastname, createdate, lastmodifieddate,
//     hs_object_id). Requested properties without a value come back as null.
//     Writes (create, update, upsert, merge) return every stored property.
//   - Contact emails are unique, case-insensitive and stored lowercased.
//   - Reading a merged-away id (single GET or batch read) answers with the
//     surviving primary record, as HubSpot does; PATCH and DELETE on it are 404.
//   - Rate limits use the injected clock (Config.Now): a rolling ten-second
//     window and a per-day counter (UTC days) for all API requests except
//     search, and a rolling one-second window (policy "SECONDLY") for search.
//     Search counts toward the daily limit but not toward the ten-second
//     window, and its answers carry no rate-limit headers. A request refused
//     with 429 consumes nothing: it is not added to any window or counter, so
//     a client hammering a full window does not extend its own punishment.
//     401 answers carry no rate-limit headers either. 429 answers never carry
//     Retry-After.
//   - Every change becomes a v3 webhook event: creation plus one
//     propertyChange per non-empty property set at creation, one
//     propertyChange per property whose value changed, deletion, and merge.
//     Automatic properties (hs_object_id, createdate, lastmodifieddate,
//     hs_lastmodifieddate, hs_merged_object_ids, hs_additional_emails) do not
//     produce propertyChange events. Events are delivered asynchronously in
//     batches, concurrently, so their order is not preserved.
//   - Webhook retry delays use the wall clock (scaled by WebhookRetryBase);
//     occurredAt and the signature timestamp use the injected clock.
//   - Associations in create inputs are accepted and ignored.
//   - GET /crm/v3/properties/{objectType} lists a new portal's built-in
//     definitions (contacts: unique email, firstname, lastname, phone,
//     company, lifecyclestage, …; companies: name, domain, numberofemployees,
//     …; deals: dealname, amount, dealstage, …; every type: read-only
//     hs_object_id, createdate, hs_lastmodifieddate) plus those created with
//     POST (or Server.CreateProperty). companies and deals also have
//     hubsync_record_id with unique values, which hubsync's default mapping
//     needs. Definitions are not enforced on object writes: any property
//     name is stored.
//   - The daily limit resets at midnight in Config.TimeZone (UTC by
//     default), as HubSpot's resets at the account's midnight. GET
//     /account-info/v3/details reports that zone (timeZone) with the portal
//     id; GET /account-info/v3/api-usage/daily/private-apps the day's use
//     and resetsAt. Both are rate limited as any other call.
//
// Control endpoints under /_sim/ (user edits, faults, limits, counters) need
// no authentication and are neither rate limited nor fault-injected; the same
// operations exist as methods on Server.
package hubspotsim
