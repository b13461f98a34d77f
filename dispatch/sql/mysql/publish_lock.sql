-- Locks the due, unpublished heads of one key's records (publish_claim without
-- RETURNING). The probe of a candidate's earlier events is forced onto the
-- record key's index: with the statistics of a table that filled up faster than
-- InnoDB recomputes them, MariaDB probed through idx_outbound_poll on
-- Destination alone, reading the whole backlog per candidate
-- (TestPublishLockProbeWithStaleStatistics).
SELECT e.Id FROM _System_IntegrationOutbound e
WHERE e.Destination = ? AND e.Status = 'pending' AND e.NextAttemptDate <= ?
  AND (e.PublishStatus IS NULL OR (e.PublishStatus IN ('publishing', 'publish_retry') AND e.PublishNextDate <= ?)
           OR (e.PublishStatus = 'published' AND e.PublishedLane <> e.Lane))
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound x FORCE INDEX (idx_outbound_open)
        WHERE x.Destination = e.Destination AND x.ObjectType = e.ObjectType AND x.RecordID = e.RecordID
          AND x.Status IN ('pending', 'processing') AND x.Lane < e.Lane)
ORDER BY e.CreatedDate, e.Id LIMIT ?
FOR UPDATE SKIP LOCKED
