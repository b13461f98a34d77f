-- Subscription requests (POST /api/subscription-requests): one row per
-- accepted request, unique per (brand, product, Idempotency-Key). request_hash
-- is the hash of the canonical request, so a retry with the same key and body
-- is answered from this row and one with another body is refused.
-- applied_sequence is the request's place in its contact's order, taken from
-- subscription_sequence in the request's transaction.
CREATE TABLE subscription_requests (
    id               TEXT    NOT NULL PRIMARY KEY,
    brand_id         TEXT    NOT NULL,
    product_id       TEXT    NOT NULL,
    contact_key      TEXT    NOT NULL,
    desired_state    TEXT    NOT NULL CHECK (desired_state IN ('subscribed', 'unsubscribed')),
    mapping_version  INTEGER NOT NULL,
    idempotency_key  TEXT    NOT NULL,
    request_hash     TEXT    NOT NULL,
    sync_status      TEXT    NOT NULL DEFAULT 'pending',
    sync_detail      TEXT    NOT NULL DEFAULT '',
    applied_sequence INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (brand_id, product_id, idempotency_key)
) STRICT;

CREATE INDEX subscription_requests_contact ON subscription_requests (brand_id, product_id, contact_key, applied_sequence);

-- The last sequence handed out per (brand, product, contact).
CREATE TABLE subscription_sequence (
    brand_id      TEXT    NOT NULL,
    product_id    TEXT    NOT NULL,
    contact_key   TEXT    NOT NULL,
    last_sequence INTEGER NOT NULL,
    PRIMARY KEY (brand_id, product_id, contact_key)
) STRICT;

-- The state HubSpot was last sent per (brand, product, contact), advanced
-- only by a conditional update (... AND applied_sequence < new), so a late
-- request never overwrites a newer one.
CREATE TABLE contact_subscription_state (
    brand_id         TEXT    NOT NULL,
    product_id       TEXT    NOT NULL,
    contact_key      TEXT    NOT NULL,
    desired_state    TEXT    NOT NULL,
    applied_sequence INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (brand_id, product_id, contact_key)
) STRICT;

-- Idempotency-Key of the records API: the response stored per key, replayed
-- for a retry with the same request; status_code 0 while the first request
-- runs. Deleted after the retention by the cleaner.
CREATE TABLE hubsync_idempotency (
    scope           TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    request_hash    TEXT    NOT NULL,
    status_code     INTEGER NOT NULL DEFAULT 0,
    content_type    TEXT    NOT NULL DEFAULT '',
    response_body   BLOB,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
) STRICT;

CREATE INDEX hubsync_idempotency_created ON hubsync_idempotency (created_at);
