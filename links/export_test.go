package links

// Query returns the statement called name in l's dialect, for the plan tests
// to EXPLAIN.
func (l *Links) Query(name string) string { return l.q.Get(name) }
