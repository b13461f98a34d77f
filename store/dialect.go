package store

import (
	"errors"
	"fmt"
	"strings"
)

// Dialect names a supported database.
type Dialect string

// The supported databases.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

// DatabaseURL is a parsed database URL (hubsync.ParseDatabaseURL).
type DatabaseURL struct {
	Dialect Dialect
	// Driver is the database/sql driver name to open DSN with.
	Driver string
	// DSN is the driver's data source name.
	DSN string
}

// ErrDatabaseURL is wrapped by every error about a database URL.
var ErrDatabaseURL = errors.New("invalid database URL")

// DialectOf returns the dialect a database URL names by its scheme:
//
//	sqlite:PATH              (also sqlite://PATH, sqlite::memory:)
//	postgres://user@host:port/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@host:port/db                 (also mariadb://)
//
// It only splits on the scheme; the backend of the dialect parses the rest
// (sqlitestore.ParseURL, pgstore.ParseURL, mysqlstore.ParseURL).
func DialectOf(raw string) (Dialect, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return "", fmt.Errorf("%w: empty; use sqlite:PATH, postgres://... or mysql://...", ErrDatabaseURL)
	case strings.HasPrefix(raw, "sqlite:"):
		return SQLite, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return Postgres, nil
	case strings.HasPrefix(raw, "mysql://"), strings.HasPrefix(raw, "mariadb://"):
		return MySQL, nil
	}
	return "", fmt.Errorf("%w: %q has an unknown scheme; use sqlite:PATH, postgres://... or mysql://...", ErrDatabaseURL, RedactURL(raw))
}
