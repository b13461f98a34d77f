-- Template definitions every dialect's queries share. A file whose name starts
-- with _ holds definitions only; every other sql/NAME.sql is the query NAME,
-- the same on every dialect unless a backend's own sql/NAME.sql overrides it.

{{define "keyed"}}{{if .Key}}e.{{.Key}} = @key AND {{end}}{{end}}

{{/* recordof selects an event's id and its record, as the sequence counter
     (hubsync_record_seq) keys it: the queue's key column ('' for the internal
     queue), the object type and the record's id. */}}
{{define "recordof"}}SELECT Id, {{if .Key}}{{.Key}}{{else}}''{{end}}, ObjectType, {{if eq .Dir "inbound"}}ExternalID{{else}}RecordID{{end}}{{end}}
