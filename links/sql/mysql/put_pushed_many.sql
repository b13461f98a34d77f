-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds, "s": the events' highest
-- Seq}. A stored state is replaced only by a newer one: a higher Seq, or the
-- same Seq (states from before migration 012 have 0) and a version no lower.
-- MySQL has no ON DUPLICATE KEY … WHERE, so each column keeps its value unless
-- the test holds; Version and Seq come last, as MySQL assigns left to right
-- and the test reads them (after Version's assignment it still gives the same
-- answer).
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate, Seq)
SELECT ?, ?, j.r, j.e, j.v, IF(JSON_TYPE(j.f) = 'NULL', NULL, j.f), j.d,
       TIMESTAMPADD(MICROSECOND, j.t, '1970-01-01 00:00:00.000000'), ?, j.s
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    r VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.r',
    e VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.e',
    v BIGINT PATH '$.v',
    f JSON PATH '$.f',
    d BOOLEAN PATH '$.d',
    t BIGINT PATH '$.t',
    s BIGINT PATH '$.s'
)) AS j
ON DUPLICATE KEY UPDATE
    ExternalID = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(ExternalID), ExternalID),
    Fields = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(Fields), Fields),
    Deleted = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(Deleted), Deleted),
    EventDate = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(EventDate), EventDate),
    LastModifiedDate = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(LastModifiedDate), LastModifiedDate),
    Version = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(Version), Version),
    Seq = IF((VALUES(Seq) > Seq OR (VALUES(Seq) = Seq AND VALUES(Version) >= Version)), VALUES(Seq), Seq)
