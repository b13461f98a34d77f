-- Parameters: object type, value, destination. Emails match whatever their
-- case (HubSpot keeps them in lower case). The index holds the lower-cased
-- email's first 191 characters (migration 028): it finds the candidates, and
-- the whole value decides.
-- The "not linked" check is one probe of hubsync_link's primary key per
-- candidate, whatever the statistics: the first link at or after the
-- candidate's key, kept only if it is the candidate's. A plain NOT EXISTS on
-- a link table without statistics may be planned as a read of every link of
-- the object type through the external-id index, once per candidate.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND lower(left(r.Fields ->> 'email', 191)) = lower(left(CAST($2 AS TEXT), 191))
  AND lower(r.Fields ->> 'email') = lower(CAST($2 AS TEXT))
  AND NOT EXISTS (
    SELECT 1 FROM (
        SELECT Destination, ObjectType, RecordID FROM hubsync_link
        WHERE (Destination, ObjectType, RecordID) >= ($3, r.ObjectType, r.Id)
        ORDER BY Destination, ObjectType, RecordID
        LIMIT 1
    ) AS l
    WHERE l.Destination = $3 AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
