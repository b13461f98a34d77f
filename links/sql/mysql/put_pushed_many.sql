-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds}.
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate)
SELECT ?, ?, j.r, j.e, j.v, IF(JSON_TYPE(j.f) = 'NULL', NULL, j.f), j.d,
       TIMESTAMPADD(MICROSECOND, j.t, '1970-01-01 00:00:00.000000'), ?
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    r VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.r',
    e VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.e',
    v BIGINT PATH '$.v',
    f JSON PATH '$.f',
    d BOOLEAN PATH '$.d',
    t BIGINT PATH '$.t'
)) AS j
ON DUPLICATE KEY UPDATE ExternalID = VALUES(ExternalID), Version = VALUES(Version), Fields = VALUES(Fields),
    Deleted = VALUES(Deleted), EventDate = VALUES(EventDate), LastModifiedDate = VALUES(LastModifiedDate)
