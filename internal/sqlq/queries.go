package sqlq

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// Placeholders is a dialect's bind-parameter style.
type Placeholders int

// The placeholder styles.
const (
	// Question binds ?, one argument per occurrence (SQLite, MySQL).
	Question Placeholders = iota
	// Dollar binds $1, $2, …; a parameter used twice keeps its number (PostgreSQL).
	Dollar
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

var paramRE = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

// bind rewrites @name parameters of text to the placeholder style.
func bind(name, text string, style Placeholders) query {
	q := query{name: name}
	pos := map[string]int{}
	q.text = paramRE.ReplaceAllStringFunc(text, func(m string) string {
		n := m[1:]
		if style == Question {
			q.names = append(q.names, n)
			return "?"
		}
		i, ok := pos[n]
		if !ok {
			q.names = append(q.names, n)
			i = len(q.names)
			pos[n] = i
		}
		return "$" + strconv.Itoa(i)
	})
	return q
}

// splitNamed splits rendered query text at "-- name: X" lines. Blocks that render
// to nothing but comments and blanks are dropped, so a query that a queue does
// not have can be wrapped in a template condition.
func splitNamed(text string) (map[string]string, error) {
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		s := strings.TrimSpace(body.String())
		s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
		body.Reset()
		if onlyComments(s) {
			return nil
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("sqlq: query %s is defined twice", name)
		}
		out[name] = s
		return nil
	}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			name = strings.TrimSpace(rest)
			continue
		}
		if name != "" {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := flush(); err != nil {
		return nil, err
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

// loadQueries renders the dialect's query template for one queue and binds it.
func loadQueries(src string, t tableData, style Placeholders) (map[string]query, error) {
	tmpl, err := template.New(t.Table).Funcs(templateFuncs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("sqlq: parse queries: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, t); err != nil {
		return nil, fmt.Errorf("sqlq: render queries for %s: %w", t.Table, err)
	}
	named, err := splitNamed(buf.String())
	if err != nil {
		return nil, err
	}
	out := make(map[string]query, len(named))
	for n, text := range named {
		out[n] = bind(n, text, style)
	}
	return out, nil
}
