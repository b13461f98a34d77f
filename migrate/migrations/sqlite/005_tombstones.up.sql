-- One tombstone per external id that was deleted or merged away at its source,
-- so that a late, older change of that id (sources do not order their events)
-- cannot bring it back as a live record. Kind is 'deleted' or 'merged';
-- SurvivorID is, for 'merged', the external id it was merged into (else '').
-- OccurredAt is the source's time of the deletion or merge, in INTEGER unix
-- microseconds (UTC). Destination is the source, as in hubsync_link.
CREATE TABLE hubsync_tombstone (
    Destination TEXT    NOT NULL,
    ObjectType  TEXT    NOT NULL,
    ExternalID  TEXT    NOT NULL,
    Kind        TEXT    NOT NULL,
    SurvivorID  TEXT    NOT NULL DEFAULT '',
    OccurredAt  INTEGER NOT NULL,
    CreatedDate INTEGER NOT NULL,
    PRIMARY KEY (Destination, ObjectType, ExternalID)
) STRICT;
