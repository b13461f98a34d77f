-- Subscription requests (POST /api/subscription-requests): one row per
-- accepted request, unique per (brand, product, Idempotency-Key). request_hash
-- is the hash of the canonical request, so a retry with the same key and body
-- is answered from this row and one with another body is refused.
-- applied_sequence is the request's place in its contact's order, taken from
-- subscription_sequence in the request's transaction.
CREATE TABLE subscription_requests (
    id               VARCHAR(36)  NOT NULL PRIMARY KEY,
    brand_id VARCHAR(100) NOT NULL,
    product_id VARCHAR(100) NOT NULL,
    contact_key VARCHAR(255) NOT NULL,
    desired_state VARCHAR(20) NOT NULL CHECK (desired_state IN ('subscribed', 'unsubscribed')),
    mapping_version BIGINT NOT NULL,
    idempotency_key VARCHAR(255) NOT NULL,
    request_hash VARCHAR(64) NOT NULL,
    sync_status VARCHAR(20) NOT NULL DEFAULT 'pending',
    sync_detail      VARCHAR(1000) NOT NULL DEFAULT '',
    applied_sequence BIGINT NOT NULL DEFAULT 0,
    created_at DATETIME(6) NOT NULL,
    updated_at DATETIME(6) NOT NULL,
    UNIQUE (brand_id, product_id, idempotency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX subscription_requests_contact ON subscription_requests (brand_id, product_id, contact_key, applied_sequence);

-- The last sequence handed out per (brand, product, contact).
CREATE TABLE subscription_sequence (
    brand_id VARCHAR(100) NOT NULL,
    product_id VARCHAR(100) NOT NULL,
    contact_key VARCHAR(255) NOT NULL,
    last_sequence BIGINT NOT NULL,
    PRIMARY KEY (brand_id, product_id, contact_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The state HubSpot was last sent per (brand, product, contact), advanced
-- only by a conditional update (... AND applied_sequence < new), so a late
-- request never overwrites a newer one.
CREATE TABLE contact_subscription_state (
    brand_id VARCHAR(100) NOT NULL,
    product_id VARCHAR(100) NOT NULL,
    contact_key VARCHAR(255) NOT NULL,
    desired_state VARCHAR(20) NOT NULL,
    applied_sequence BIGINT NOT NULL,
    updated_at DATETIME(6) NOT NULL,
    PRIMARY KEY (brand_id, product_id, contact_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Idempotency-Key of the records API: the response stored per key, replayed
-- for a retry with the same request; status_code 0 while the first request
-- runs. Deleted after the retention by the cleaner.
CREATE TABLE hubsync_idempotency (
    scope VARCHAR(50) NOT NULL,
    idempotency_key VARCHAR(255) NOT NULL,
    request_hash VARCHAR(64) NOT NULL,
    status_code     BIGINT NOT NULL DEFAULT 0,
    content_type VARCHAR(100) NOT NULL DEFAULT '',
    response_body   LONGBLOB,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX hubsync_idempotency_created ON hubsync_idempotency (created_at);
