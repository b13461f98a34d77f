-- The publisher's claim (SQLite: one writer, one statement). Args: lease
-- expiry, key, now, now, limit. Only pending, due record heads (no earlier
-- unfinished event of their record) are published, so a record's events go
-- out one after the other, in order. One already published waits for its
-- delivery or for the reconciliation sweep, unless it was re-queued from the
-- dead letters since (a new Lane): that is published under the next
-- generation's deduplication id.
UPDATE _System_IntegrationOutbound
SET PublishGeneration = PublishGeneration + (CASE WHEN PublishStatus = 'published' THEN 1 ELSE 0 END),
    PublishStatus = 'publishing', PublishAttempts = PublishAttempts + 1, PublishNextDate = ?
WHERE Id IN (
    SELECT e.Id FROM _System_IntegrationOutbound e
    WHERE e.Destination = ? AND e.Status = 'pending' AND e.NextAttemptDate <= ?
      AND (e.PublishStatus IS NULL OR (e.PublishStatus IN ('publishing', 'publish_retry') AND e.PublishNextDate <= ?)
           OR (e.PublishStatus = 'published' AND e.PublishedLane <> e.Lane))
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound x
        WHERE x.Destination = e.Destination AND x.ObjectType = e.ObjectType AND x.RecordID = e.RecordID
          AND x.Status IN ('pending', 'processing') AND x.Lane < e.Lane)
    ORDER BY e.CreatedDate, e.Id LIMIT ?
)
RETURNING Id, PublishAttempts, PublishGeneration
