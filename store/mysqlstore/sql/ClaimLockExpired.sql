{{template "expired" locked .}}
