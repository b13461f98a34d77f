package dialectsql

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hubsync/hubsync/store"
)

// Dialects lists the dialects hubsync supports.
var Dialects = []store.Dialect{store.SQLite, store.Postgres, store.MySQL}

// Known reports whether d is a supported dialect.
func Known(d store.Dialect) bool {
	for _, k := range Dialects {
		if k == d {
			return true
		}
	}
	return false
}

// Layer is one folder of .sql files: Dir inside FS. A missing folder is an
// empty layer when Optional is set, and an error otherwise.
type Layer struct {
	FS       fs.FS
	Dir      string
	Optional bool
}

// Read reads the files of each layer whose name ends in suffix (".sql",
// ".up.sql") and returns their contents by name without the suffix. A file of
// a later layer replaces the one of the same name of an earlier layer, so the
// first layer holds what every dialect shares and the later ones a dialect's
// overrides. It is the one .sql file loader of hubsync.
func Read(suffix string, layers ...Layer) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range layers {
		dir := l.Dir
		if dir == "" {
			dir = "."
		}
		entries, err := fs.ReadDir(l.FS, dir)
		if err != nil {
			if l.Optional {
				continue
			}
			return nil, fmt.Errorf("dialectsql: read %s: %w", dir, err)
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), suffix)
			if e.IsDir() || !ok {
				continue
			}
			b, err := fs.ReadFile(l.FS, path.Join(dir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("dialectsql: read %s: %w", e.Name(), err)
			}
			out[name] = string(b)
		}
	}
	return out, nil
}

// Queries are the named SQL statements of one package for one dialect.
type Queries struct {
	dialect store.Dialect
	byName  map[string]string
}

// Load reads dir/*.sql and then dir/<dialect>/*.sql (overrides) from fsys, and
// rebinds ? placeholders for the dialect. Each file holds one statement; its
// name without .sql names it.
func Load(fsys fs.FS, dir string, d store.Dialect) (*Queries, error) {
	if !Known(d) {
		return nil, fmt.Errorf("dialectsql: unknown dialect %q", d)
	}
	files, err := Read(".sql", Layer{FS: fsys, Dir: dir}, Layer{FS: fsys, Dir: path.Join(dir, string(d)), Optional: true})
	if err != nil {
		return nil, err
	}
	q := &Queries{dialect: d, byName: make(map[string]string, len(files))}
	for name, text := range files {
		q.byName[name] = Rebind(d, strings.TrimRight(strings.TrimSpace(text), ";"))
	}
	return q, nil
}

// Get returns the statement called name. A missing name is a programming error
// that every test of the calling package hits, so it panics.
func (q *Queries) Get(name string) string {
	s, ok := q.byName[name]
	if !ok {
		panic(fmt.Sprintf("dialectsql: no query %q for %s", name, q.dialect))
	}
	return s
}
