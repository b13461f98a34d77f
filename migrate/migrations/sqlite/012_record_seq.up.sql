-- Database-assigned order of a record's events (store/doc.go, "Order"); see
-- the PostgreSQL migration of the same number.
CREATE TABLE hubsync_record_seq (
    Queue      TEXT    NOT NULL,
    RecordKey  TEXT    NOT NULL,
    ObjectType TEXT    NOT NULL,
    RecordID   TEXT    NOT NULL,
    Seq        INTEGER NOT NULL,
    PRIMARY KEY (Queue, RecordKey, ObjectType, RecordID)
) STRICT;

ALTER TABLE _System_IntegrationInbound ADD COLUMN Seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationInbound ADD COLUMN Lane INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN Seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN Lane INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_OutboxEvent ADD COLUMN Seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_OutboxEvent ADD COLUMN Lane INTEGER NOT NULL DEFAULT 0;

UPDATE _System_IntegrationInbound AS t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Source, ObjectType, ExternalID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationInbound) AS n WHERE n.Id = t.Id;
UPDATE _System_IntegrationOutbound AS t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Destination, ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationOutbound) AS n WHERE n.Id = t.Id;
UPDATE _System_OutboxEvent AS t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_OutboxEvent) AS n WHERE n.Id = t.Id;

INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'inbound', Source, ObjectType, ExternalID, MAX(Seq) FROM _System_IntegrationInbound GROUP BY Source, ObjectType, ExternalID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'outbound', Destination, ObjectType, RecordID, MAX(Seq) FROM _System_IntegrationOutbound GROUP BY Destination, ObjectType, RecordID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'internal', '', ObjectType, RecordID, MAX(Seq) FROM _System_OutboxEvent GROUP BY ObjectType, RecordID;

DROP INDEX idx_inbound_open;
CREATE INDEX idx_inbound_open ON _System_IntegrationInbound (Source, ObjectType, ExternalID, Lane)
    WHERE Status IN ('pending', 'processing');
DROP INDEX idx_outbound_open;
CREATE INDEX idx_outbound_open ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, Lane)
    WHERE Status IN ('pending', 'processing');
DROP INDEX idx_outboxevent_open;
CREATE INDEX idx_outboxevent_open ON _System_OutboxEvent (ObjectType, RecordID, Lane)
    WHERE Status IN ('pending', 'processing');
DROP INDEX idx_inbound_lease;
CREATE INDEX idx_inbound_lease ON _System_IntegrationInbound (Source, ObjectType, ExternalID, LeaseExpiresDate)
    WHERE Status = 'processing';

ALTER TABLE hubsync_pushed ADD COLUMN Seq INTEGER NOT NULL DEFAULT 0;
