package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestDashboardMountedWithAdminToken: the dashboard exists only with an admin
// token, and a wrong sign-in counts as an admin authentication failure.
func TestDashboardMountedWithAdminToken(t *testing.T) {
	off := startServer(t, Config{DatabaseURL: dbtest.Migrated(t, store.SQLite).URL})
	if code, _ := get(t, "http://"+off.Addr()+"/admin/ui/login"); code != http.StatusNotFound {
		t.Fatalf("dashboard without an admin token = %d, want 404", code)
	}

	on := startServer(t, Config{DatabaseURL: dbtest.Migrated(t, store.SQLite).URL, AdminToken: "admin-token-0123456789"})
	base := "http://" + on.Addr()
	if code, body := get(t, base+"/admin/ui/login"); code != http.StatusOK || !strings.Contains(body, `name="token"`) {
		t.Fatalf("sign-in form = %d %s", code, body)
	}
	resp, err := http.PostForm(base+"/admin/ui/login", url.Values{"token": {"wrong-token-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong sign-in = %d, want 401", resp.StatusCode)
	}
	if _, metrics := get(t, base+"/metrics"); !strings.Contains(metrics, `hubsync_auth_failures_total{area="admin"} 1`) {
		t.Fatalf("the failed sign-in is not counted:\n%s", grepLines(metrics, "hubsync_auth_failures_total"))
	}
}
