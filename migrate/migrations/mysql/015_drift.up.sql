-- Where a drift scan stopped: one row per scan phase ("records": local
-- records in id order; "hubspot": HubSpot objects in id order) and object
-- type. LastID is the last id whose page was compared; a scan that is killed
-- resumes after it, and a phase that reaches its end deletes its row, so the
-- next scan starts from the beginning.
CREATE TABLE hubsync_drift_cursor (
    Phase            VARCHAR(20)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    LastID           VARCHAR(255) NOT NULL,
    LastModifiedDate DATETIME(6)  NOT NULL,
    PRIMARY KEY (Phase, ObjectType)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
