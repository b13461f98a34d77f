// Package qstashsim is an in-process emulator of Upstash QStash's HTTP API,
// as far as hubsync's qstash dispatch mode uses it: publish, delivery with
// signatures, retries, flow control and the dead letter queue. It follows the
// documented wire format (see shared/reference/qstash.md) so that the
// official SDKs' clients and receivers work against it, and it injects
// delivery faults that real QStash only shows now and then.
//
// The emulator is an independent implementation: it shares no code with
// hubsync's package qstash, so that it can catch bugs in hubsync's publisher
// and signature verifier. Its own Sign and Verify exist for its tests.
//
// # Behaviour worth knowing
//
//   - POST /v2/publish/{destination} takes the destination appended raw
//     (/v2/publish/http://127.0.0.1:8080/qstash/hubspot; a fully
//     percent-encoded destination is decoded) and the request's query string
//     as the destination's. It needs "Authorization: Bearer <Config.Token>"
//     (401 otherwise) and answers 201 {"messageId":"msg_…","deduplicated":false}.
//     Errors are {"error":"…"}: 400 for a bad destination or header, 413 for
//     a body over Config.BodyMax.
//   - Upstash-Deduplication-Id, or Upstash-Content-Based-Deduplication: true
//     (destination, Content-Type, forwarded headers and body), make a
//     publish within Config.DedupWindow (10 minutes, on the Config.Now clock)
//     of the same key answer 202 with the first message's id and
//     "deduplicated":true; nothing more is delivered.
//   - A delivery POSTs (or Upstash-Method) the body to the destination with
//     Upstash-Signature (a HS256 JWT keyed with the signing key's bytes:
//     iss "Upstash", sub the destination as published, exp now+5min, nbf,
//     iat, jti, body base64url(SHA-256(body)) with "=" padding),
//     Upstash-Message-Id, Upstash-Retried (0 first), Upstash-Caller-Ip,
//     User-Agent Upstash-QStash, Content-Type and the Upstash-Forward-*
//     headers without their prefix. SetSignWithNext signs with the next key.
//   - Any 2xx is delivered. Anything else, a timeout (Upstash-Timeout, else
//     Config.DeliveryTimeout) or a reset is retried Upstash-Retries times
//     (default 3): after Retry-After on a 429 or 503 (seconds, HTTP date or
//     Go duration, capped at a day), else the Upstash-Retry-Delay expression
//     in milliseconds of retried (0 before the first retry), else
//     min(86400, e^(2.5·n)) s before retry n. A 489 with
//     Upstash-NonRetryable-Error: true, or the last failed retry, moves the
//     message to the DLQ (GET /v2/dlq, GET|DELETE /v2/dlq/{dlqId},
//     POST /v2/dlq/retry/{dlqId}).
//   - Every wait (backoff, Retry-After, Upstash-Delay, Upstash-Not-Before)
//     is multiplied by Config.DelayScale before the emulator sleeps on the
//     wall clock; MessageInfo.Delays records the unscaled choice, so tests
//     check the backoff without timing it.
//   - Upstash-Flow-Control-Key with Upstash-Flow-Control-Value
//     ("parallelism=12, rate=150, period=10s") limits the key's deliveries
//     in flight and started per period (a sliding window, never scaled);
//     every attempt counts, retries and injected duplicates too. The last
//     published value of a key is in force. Stats.MaxParallelism and
//     Stats.MaxRatePerPeriod report the most ever seen.
//
// The control API under /_sim/qstash/ needs no token: stats (GET, POST
// stats/reset), faults (GET, PUT: drop, delay, duplicate), signing (GET, PUT
// {"signWithNext":true}) and messages/{id} (state, retries, delays). The
// same operations are methods on Server.
//
// `hubsync sim -qstash` serves the emulator on the HubSpot simulator's
// address (Server.StartWith), so QSTASH_URL is the simulator's base URL.
package qstashsim
