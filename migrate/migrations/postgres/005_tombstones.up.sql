-- One tombstone per external id that was deleted or merged away at its source,
-- so that a late, older change of that id (sources do not order their events)
-- cannot bring it back as a live record. Kind is 'deleted' or 'merged';
-- SurvivorID is, for 'merged', the external id it was merged into (else '').
-- OccurredAt is the source's time of the deletion or merge. Destination is the
-- source, as in hubsync_link.
CREATE TABLE hubsync_tombstone (
    Destination VARCHAR(50)  NOT NULL,
    ObjectType  VARCHAR(100) NOT NULL,
    ExternalID  VARCHAR(255) NOT NULL,
    Kind        VARCHAR(20)  NOT NULL,
    SurvivorID  VARCHAR(255) NOT NULL DEFAULT '',
    OccurredAt  TIMESTAMPTZ  NOT NULL,
    CreatedDate TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (Destination, ObjectType, ExternalID)
);
