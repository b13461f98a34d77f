-- Database-assigned order of a record's events (store/doc.go, "Order").
--
-- hubsync_record_seq holds one counter per record and queue. An enqueue
-- increments its record's counter in the enqueueing transaction (an upsert that
-- keeps the row locked until commit), so a record's sequences grow in commit
-- order, whatever the enqueueing processes' clocks say.
--
-- Seq is the change's sequence, assigned once. Lane is the event's place in
-- its record's claim order: Seq at enqueue, a new sequence at the end of the
-- record's lane when a dead letter is re-queued. Existing events are numbered
-- in their old (CreatedDate, Id) order.
CREATE TABLE hubsync_record_seq (
    Queue      VARCHAR(20)  NOT NULL,
    RecordKey  VARCHAR(50)  NOT NULL,
    ObjectType VARCHAR(100) NOT NULL,
    RecordID   VARCHAR(255) NOT NULL,
    Seq        BIGINT       NOT NULL,
    PRIMARY KEY (Queue, RecordKey, ObjectType, RecordID)
);

ALTER TABLE _System_IntegrationInbound ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;
ALTER TABLE _System_OutboxEvent ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN Lane BIGINT NOT NULL DEFAULT 0;

UPDATE _System_IntegrationInbound t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Source, ObjectType, ExternalID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationInbound) n WHERE n.Id = t.Id;
UPDATE _System_IntegrationOutbound t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY Destination, ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_IntegrationOutbound) n WHERE n.Id = t.Id;
UPDATE _System_OutboxEvent t SET Seq = n.s, Lane = n.s FROM (
    SELECT Id, ROW_NUMBER() OVER (PARTITION BY ObjectType, RecordID ORDER BY CreatedDate, Id) AS s
    FROM _System_OutboxEvent) n WHERE n.Id = t.Id;

INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'inbound', Source, ObjectType, ExternalID, MAX(Seq) FROM _System_IntegrationInbound GROUP BY Source, ObjectType, ExternalID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'outbound', Destination, ObjectType, RecordID, MAX(Seq) FROM _System_IntegrationOutbound GROUP BY Destination, ObjectType, RecordID;
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT 'internal', '', ObjectType, RecordID, MAX(Seq) FROM _System_OutboxEvent GROUP BY ObjectType, RecordID;

-- A record's open events in lane order; the inbound record is now
-- (Source, ObjectType, ExternalID): a contact and a company with the same id
-- are two records.
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
    WHERE LeaseExpiresDate IS NOT NULL;

-- The highest Seq among the events a pushed state came from: a state is
-- replaced only by a newer one (links put_pushed_many).
ALTER TABLE hubsync_pushed ADD COLUMN Seq BIGINT NOT NULL DEFAULT 0;
