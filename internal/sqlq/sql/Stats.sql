SELECT {{if .Key}}{{.Key}}{{else}}''{{end}}, Status, COUNT(*), MIN(CreatedDate)
FROM {{.Table}} GROUP BY 1, 2 ORDER BY 1, 2
