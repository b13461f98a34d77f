package sqlq

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/hubsync/hubsync/internal/dialectsql"
)

// query is one named query, rewritten to the dialect's placeholders.
type query struct {
	name  string
	text  string
	names []string // parameter name of each bind position
}

// params are a call's named arguments.
type params map[string]any

// args orders p for q's placeholders.
func (q query) args(p params) ([]any, error) {
	out := make([]any, len(q.names))
	for i, n := range q.names {
		v, ok := p[n]
		if !ok {
			return nil, fmt.Errorf("sqlq: query %s needs parameter @%s", q.name, n)
		}
		out[i] = v
	}
	return out, nil
}

func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			return false
		}
	}
	return true
}

// templateFuncs help a query template speak about the queue it is rendered for.
var templateFuncs = template.FuncMap{
	// same renders "a.C1 = b.C1 AND a.C2 = b.C2" over the queue's record key,
	// the columns that make two events belong to one record.
	"same": func(t tableData, a, b string) string {
		parts := make([]string, len(t.Record))
		for i, c := range t.Record {
			parts[i] = a + "." + c + " = " + b + "." + c
		}
		return strings.Join(parts, " AND ")
	},
	// tuple renders "a.C1, a.C2, a.C3", the record key's columns qualified by
	// alias, in key order: for row comparisons and ORDER BY over records.
	"tuple": func(t tableData, a string) string {
		parts := make([]string, len(t.Record))
		for i, c := range t.Record {
			parts[i] = a + "." + c
		}
		return strings.Join(parts, ", ")
	},
	// lanekey renders the PostgreSQL record lanes' LaneKey (migration 018) of
	// the record key columns qualified by alias: the length of each column but
	// the last, each followed by ':', then the columns, so that no two keys
	// render alike.
	"lanekey": func(t tableData, a string) string {
		var parts []string
		for _, c := range t.Record[:len(t.Record)-1] {
			parts = append(parts, "length("+a+"."+c+")::text", "':'")
		}
		for _, c := range t.Record {
			parts = append(parts, a+"."+c)
		}
		return "(" + strings.Join(parts, " || ") + ")"
	},
	// locked returns the data with Lock set, for a shared block rendered both
	// as a plain read and as a claim's locking read.
	"locked": func(t tableData) tableData {
		t.Lock = "FOR UPDATE SKIP LOCKED"
		return t
	},
	// withFollowers returns the data with Followers set.
	"withFollowers": func(t tableData) tableData {
		t.Followers = true
		return t
	},
	// cols renders the queue's column list, each qualified by alias unless it is "".
	"cols": func(t tableData, alias string) string {
		parts := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			parts[i] = c
			if alias != "" {
				parts[i] = alias + "." + c
			}
		}
		return strings.Join(parts, ", ")
	},
}

//go:embed sql/*.sql
var sharedSQL embed.FS

// loadQueries reads the queries every dialect shares (sql/NAME.sql here) and the
// backend's own (sql/NAME.sql of d.Queries, which override them), renders each
// for one queue and binds its parameters for the dialect. A file whose name
// starts with _ holds template definitions only. A query that renders to
// nothing but comments is one this queue does not have.
func loadQueries(d Dialect, t tableData) (map[string]query, error) {
	files, err := dialectsql.Read(".sql", dialectsql.Layer{FS: sharedSQL, Dir: "sql"}, dialectsql.Layer{FS: d.Queries, Dir: "sql"})
	if err != nil {
		return nil, fmt.Errorf("sqlq: %s queries: %w", d.Name, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	root := template.New(t.Table).Funcs(templateFuncs).Option("missingkey=error")
	for _, n := range names {
		if _, err := root.New(n).Parse(files[n]); err != nil {
			return nil, fmt.Errorf("sqlq: parse %s query %s: %w", d.Name, n, err)
		}
	}
	out := make(map[string]query, len(names))
	for _, n := range names {
		if strings.HasPrefix(n, "_") {
			continue
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, t); err != nil {
			return nil, fmt.Errorf("sqlq: render %s for %s: %w", n, t.Table, err)
		}
		text := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(buf.String()), ";"))
		if onlyComments(text) {
			continue
		}
		bound, params := dialectsql.Bind(d.Name, text)
		out[n] = query{name: n, text: bound, names: params}
	}
	return out, nil
}
