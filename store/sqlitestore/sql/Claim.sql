WITH {{template "due" .}}, {{template "followers" .}}
{{template "lease" withFollowers .}}
