-- The heads of the first @limit due lanes of the key, as Claim would pick
-- them, without locking anything.
SELECT {{cols . "t"}} FROM (
    SELECT n.HeadId FROM hubsync_lane_{{.Dir}} n
    WHERE {{if .Key}}n.{{.Key}} = @key AND {{end}}n.DueDate <= @now
    ORDER BY {{if .Key}}n.{{.Key}}, {{end}}n.DueDate, n.HeadId
    LIMIT @limit) h
JOIN {{.Table}} t ON t.Id = h.HeadId
