// Package budget shares HubSpot's API call allowance between every worker of every
// hubsync replica (seed 002's hubspotBudget.reserve).
//
// A caller reserves the calls it is about to make before making them. When the
// rolling window (or the daily limit) has no room, the reservation is refused with
// the time until enough room frees up, and the caller releases its work instead
// of failing it. A caller that can hold its work for a moment books instead
// (Scheduler.Schedule): it gets the next room within its horizon, in the order
// callers ask, paced (Config.Pace), and makes its call then, so that room
// freed in the window is used at once. After each HubSpot answer the caller feeds the rate-limit headers
// (and any 429) back with Observe, so the budget learns what HubSpot counted,
// and, with the call's grant (Observation.Grant; WithCall marks a call's
// context for ObserveHubSpot's hook), when the call was answered: a grant is
// counted for Window + CallLead, in case its call reaches HubSpot late, and an
// answered call for Window (plus a bucket) from its answer, which is sooner
// for a call answered at once and later for one that was slow.
//
// Two implementations share one algorithm (a sliding window of 100 buckets per
// Window, a day counter (days of Config.TimeZone) and a pause):
//
//   - NewMemory keeps it in process: one replica only.
//   - NewSQL keeps it in a row per key of the hubsync database (PostgreSQL,
//     MySQL/MariaDB or SQLite), locked for one short transaction per call, so any
//     number of replicas share it and never together exceed it.
//
// SQL.Usage reads every key's calls today and any pause, read-only, for
// operators (`hubsync status`).
//
// There is no Redis implementation: it would add a client module the project
// does not otherwise need.
//
// Guarantee: in any half-open interval of length Window, the tokens granted for
// one key never exceed its limit (Limit, or SearchLimit per second for keys that
// end in SearchKeySuffix), as long as the replicas' clocks agree. Because grants
// are counted per bucket (Window/100), a refused caller may be told to wait up
// to one bucket longer than an exact log would say.
//
// Keys name one HubSpot app's allowance, e.g. "portal:12345:private-app:primary";
// SearchKey(key) names the same app's separate 5-per-second search allowance.
// Search keys have no daily limit of their own.
package budget
