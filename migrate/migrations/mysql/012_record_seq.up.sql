-- Database-assigned order of a record's events (store/doc.go, "Order"); see
-- the PostgreSQL migration of the same number.
CREATE TABLE hubsync_record_seq (
    Queue      VARCHAR(20)  NOT NULL,
    RecordKey  VARCHAR(50)  NOT NULL,
    ObjectType VARCHAR(100) NOT NULL,
    RecordID   VARCHAR(255) NOT NULL,
    Seq        BIGINT       NOT NULL,
    PRIMARY KEY (Queue, RecordKey, ObjectType, RecordID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE _System_IntegrationInbound ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;
ALTER TABLE _System_OutboxEvent ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;

UPDATE _System_IntegrationInbound t JOIN (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Source, ObjectType, ExternalID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationInbound) n ON n.Id = t.Id SET t.Seq = n.s, t.Lane = n.s;
UPDATE _System_IntegrationOutbound t JOIN (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Destination, ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationOutbound) n ON n.Id = t.Id SET t.Seq = n.s, t.Lane = n.s;
UPDATE _System_OutboxEvent t JOIN (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_OutboxEvent) n ON n.Id = t.Id SET t.Seq = n.s, t.Lane = n.s;

INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'inbound', Source, ObjectType, ExternalID, MAX(Seq) FROM _System_IntegrationInbound GROUP BY Source, ObjectType, ExternalID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'outbound', Destination, ObjectType, RecordID, MAX(Seq) FROM _System_IntegrationOutbound GROUP BY Destination, ObjectType, RecordID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'internal', '', ObjectType, RecordID, MAX(Seq) FROM _System_OutboxEvent GROUP BY ObjectType, RecordID;

-- MySQL has no partial indexes; Status in the key selects the open events.
DROP INDEX idx_inbound_open ON _System_IntegrationInbound;
CREATE INDEX idx_inbound_open ON _System_IntegrationInbound (Source, ObjectType, ExternalID, Status, Lane);
DROP INDEX idx_outbound_open ON _System_IntegrationOutbound;
CREATE INDEX idx_outbound_open ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, Status, Lane);
DROP INDEX idx_outboxevent_open ON _System_OutboxEvent;
CREATE INDEX idx_outboxevent_open ON _System_OutboxEvent (ObjectType, RecordID, Status, Lane);
DROP INDEX idx_inbound_lease ON _System_IntegrationInbound;
CREATE INDEX idx_inbound_lease ON _System_IntegrationInbound (Source, ObjectType, ExternalID, Status, LeaseExpiresDate);

ALTER TABLE hubsync_pushed ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0;
