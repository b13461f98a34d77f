{{template "pending" locked .}}
