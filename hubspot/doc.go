// Package hubspot is a small, non-retrying client for the HubSpot APIs that
// hubsync needs: CRM v3 objects (batch create/read/update/upsert/archive,
// get, update, archive, search, merge), communication preferences (v3 and
// v4), property definitions (GetProperties, CreateProperty), and webhook
// verification (WebhookEvent, VerifyRequestVersions, SignV1/V2/V3).
//
// # No retries
//
// The Client never retries and never sleeps. Every failure comes back as an
// *Error with a Kind and, where HubSpot says or implies one, a RetryAfter,
// so that the caller's outbox scheduler owns backoff and the rate budget:
//
//	status                         Kind              RetryAfter
//	429                            KindRateLimited   Retry-After; else by policyName:
//	                                                 TEN_SECONDLY_ROLLING → interval header (10 s),
//	                                                 SECONDLY → 1 s, DAILY → the account's next
//	                                                 midnight (Config.TimeZone, UTC if unset)
//	423 Locked                     KindRetryable     max(Retry-After, 2 s)
//	477 Migration in progress      KindRetryable     Retry-After, else 1 min
//	408, 500–599 (502…524)         KindRetryable     Retry-After if sent
//	transport failure, request     KindRetryable     0 (Err holds the cause)
//	  timeout (Config.Timeout)
//	409                            KindConflict      ExistingID from "Existing ID: 123"
//	400, 422                       KindValidation
//	404                            KindNotFound
//	401, 403                       KindAuth
//	other                          KindPermanent
//
// The caller's own context cancellation or deadline is returned wrapped as
// is (errors.Is(err, context.Canceled)), with KindOf(err) == KindNone.
// errors.Is works with ErrRateLimited, ErrRetryable (also true for rate
// limits), ErrConflict, ErrValidation, ErrNotFound, ErrAuth, ErrPermanent.
// A KindRetryable failure of a non-idempotent write (create, merge) may have
// been applied: prefer BatchUpsert, or re-read before retrying.
//
// # Batches
//
// Batch calls reject more than MaxBatchInputs inputs with ErrBatchTooLarge
// before sending anything. A 207 answer is a partial success: the call
// returns a BatchResult with Multi set and per-input Errors, which
// BatchResult.ErrorFor maps back to inputs by ObjectWriteTraceID.
//
// # Rate limits
//
// Each response's X-HubSpot-RateLimit-* headers are parsed into a RateLimit,
// reported to Config.OnResponse (with the classified error of a failure) and
// attached to BatchResult and Error.
package hubspot
