WITH RECURSIVE {{template "due" locked .}}, {{template "followers" .}}
UPDATE {{.Table}} AS t
{{template "leaseset"}}
FROM (SELECT Id FROM cand UNION ALL SELECT Id FROM fol) AS c
WHERE t.Id = c.Id AND {{template "claimable"}}
RETURNING {{cols . "t"}}
