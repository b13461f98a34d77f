-- Template definitions every dialect's queries share. A file whose name starts
-- with _ holds definitions only; every other sql/NAME.sql is the query NAME,
-- the same on every dialect unless a backend's own sql/NAME.sql overrides it.

{{define "keyed"}}{{if .Key}}e.{{.Key}} = @key AND {{end}}{{end}}
