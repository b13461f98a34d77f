WITH cand AS (
    SELECT e.Id FROM _System_IntegrationOutbound e
    WHERE e.Destination = ? AND e.Status = 'pending' AND e.NextAttemptDate <= ?
      AND (e.PublishStatus IS NULL OR (e.PublishStatus IN ('publishing', 'publish_retry') AND e.PublishNextDate <= ?)
           OR (e.PublishStatus = 'published' AND e.PublishedLane <> e.Lane))
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound x
        WHERE x.Destination = e.Destination AND x.ObjectType = e.ObjectType AND x.RecordID = e.RecordID
          AND x.Status IN ('pending', 'processing') AND x.Lane < e.Lane)
    ORDER BY e.CreatedDate, e.Id LIMIT ?
    FOR UPDATE SKIP LOCKED
)
UPDATE _System_IntegrationOutbound AS t
SET PublishGeneration = t.PublishGeneration + (CASE WHEN t.PublishStatus = 'published' THEN 1 ELSE 0 END),
    PublishStatus = 'publishing', PublishAttempts = t.PublishAttempts + 1, PublishNextDate = ?
FROM cand WHERE t.Id = cand.Id
RETURNING t.Id, t.PublishAttempts, t.PublishGeneration
