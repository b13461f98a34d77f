-- The heads of the first @limit due lanes of the key, as Claim would pick
-- them, without locking anything: the lanes of records claimed before (an
-- expired lease, or a head released, retried or requeued) first, then the
-- others, each in (DueDate, HeadId) order (Claim.sql).
WITH recovered AS MATERIALIZED (
    SELECT n.HeadId FROM hubsync_lane_{{.Dir}} n
    WHERE {{if .Key}}n.{{.Key}} = @key AND {{end}}n.Claimed AND n.DueDate <= @now
    ORDER BY {{if .Key}}n.{{.Key}}, {{end}}n.DueDate, n.HeadId
    LIMIT @limit
), free AS MATERIALIZED (
    SELECT n.HeadId FROM hubsync_lane_{{.Dir}} n
    WHERE {{if .Key}}n.{{.Key}} = @key AND {{end}}NOT n.Claimed AND n.DueDate <= @now
    ORDER BY {{if .Key}}n.{{.Key}}, {{end}}n.DueDate, n.HeadId
    LIMIT @limit - (SELECT COUNT(*) FROM recovered)
)
SELECT {{cols . "t"}} FROM (SELECT * FROM recovered UNION ALL SELECT * FROM free) h
JOIN {{.Table}} t ON t.Id = h.HeadId
