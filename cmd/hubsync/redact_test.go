package main

import (
	"strings"
	"testing"
)

// TestDatabasePasswordNeverShown: the database URL's password appears neither
// in -h (where the environment's value is the flag's default) nor in the error
// about a URL that does not parse, for serve and the operator commands.
func TestDatabasePasswordNeverShown(t *testing.T) {
	t.Parallel()
	const password = "hunter2-sekret"
	cases := []struct {
		name string
		url  string
		args []string
		// wantErr is what stderr must name besides the redacted URL.
		wantErr string
	}{
		{"serve -h", "postgres://app:" + password + "@db:5432/crm", []string{"serve", "-h"}, "postgres://app:xxxxx@db:5432/crm"},
		{"migrate -h", "mysql://app:" + password + "@db:3306/crm", []string{"migrate", "-h"}, "mysql://app:xxxxx@db:3306/crm"},
		{"serve bad port", "postgres://app:" + password + "@db:port/crm", []string{"serve", "-webhooks=false", "-sync-worker=false", "-outbound-worker=false"}, "invalid port"},
		{"migrate bad port", "mysql://app:" + password + "@db:port/crm", []string{"migrate", "status"}, "invalid port"},
		{"status unknown scheme", "mongodb://app:" + password + "@db/crm", []string{"status"}, "unknown scheme"},
	}
	for _, tc := range cases {
		_, stdout, stderr := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+tc.url), tc.args...)
		if strings.Contains(stdout+stderr, password) {
			t.Errorf("%s: output shows the password:\n%s%s", tc.name, stdout, stderr)
		}
		if !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("%s: stderr does not name %q:\n%s", tc.name, tc.wantErr, stderr)
		}
	}
}

// TestToolSettingErrors: the operator commands name the setting at fault and
// what to write instead, all of them at once, and check their own flags before
// they reach for the database.
func TestToolSettingErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		url  string
		args []string
		want []string
	}{
		{"unknown scheme", "mongodb://h/db", []string{"migrate"}, []string{"HUBSYNC_DATABASE_URL", "unknown scheme"}},
		{"lock timeout with the database down", "postgres://127.0.0.1:1/db?connect_timeout=1", []string{"migrate", "-lock-timeout=0s"}, []string{"-lock-timeout", "positive duration"}},
		{"sqlite in a missing directory", "sqlite:/nonexistent-hubsync-dir/x.db", []string{"migrate"}, []string{"HUBSYNC_DATABASE_URL", "/nonexistent-hubsync-dir", "does not exist", "create it"}},
		{"sqlite under a file", "sqlite:/etc/hostname/x.db", []string{"migrate"}, []string{"HUBSYNC_DATABASE_URL", "is a file, not a directory"}},
		{"mysql driver DSN", "mysql://u:pw@tcp(127.0.0.1:3306)/db", []string{"migrate"}, []string{"HUBSYNC_DATABASE_URL", "mysql://user:pass@host:3306/DBNAME", "not the driver's"}},
		{"postgres bad host", "postgres://[::1/db", []string{"migrate"}, []string{"HUBSYNC_DATABASE_URL", "postgres://user:pass@host:5432/DBNAME"}},
		{"dlq direction", "sqlite:/nonexistent-hubsync-dir/x.db", []string{"dlq", "list", "-direction", "out"}, []string{"-direction", `direction "out" is unknown`, "use inbound, outbound or internal"}},
		{"cleanup retentions", "sqlite:/nonexistent-hubsync-dir/x.db", []string{"cleanup"}, []string{"HUBSYNC_OUTBOUND_RETENTION", "HUBSYNC_INBOUND_RETENTION", "is negative"}},
	}
	for _, tc := range cases {
		env := baseEnv("HUBSYNC_DATABASE_URL="+tc.url, "HUBSYNC_OUTBOUND_RETENTION=-1d", "HUBSYNC_INBOUND_RETENTION=-2d")
		code, _, stderr := runCmd(t, env, tc.args...)
		if code == 0 {
			t.Errorf("%s: %s succeeded", tc.name, tc.args[0])
		}
		if strings.Contains(stderr, "bad request") {
			t.Errorf("%s: stderr speaks HTTP:\n%s", tc.name, stderr)
		}
		wantNamed(t, tc.name, stderr, tc.want)
	}
}
