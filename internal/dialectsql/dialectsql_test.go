package dialectsql

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/hubsync/hubsync/store"
)

func TestRebind(t *testing.T) {
	got := Rebind(store.Postgres, "SELECT '?' -- x?\n FROM t WHERE a = ? AND b = ?")
	want := "SELECT '?' -- x?\n FROM t WHERE a = $1 AND b = $2"
	if got != want {
		t.Fatalf("Rebind = %q, want %q", got, want)
	}
	if got := Rebind(store.MySQL, "a = ?"); got != "a = ?" {
		t.Fatalf("MySQL must keep ?: %q", got)
	}
}

func TestLoadOverrides(t *testing.T) {
	fsys := fstest.MapFS{
		"sql/get.sql":          {Data: []byte("SELECT ? ;\n")},
		"sql/put.sql":          {Data: []byte("INSERT ?")},
		"sql/postgres/put.sql": {Data: []byte("UPSERT ?")},
	}
	q, err := Load(fsys, "sql", store.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if q.Get("get") != "SELECT $1 " || q.Get("put") != "UPSERT $1" {
		t.Fatalf("got %q, %q", q.Get("get"), q.Get("put"))
	}
	q, err = Load(fsys, "sql", store.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if q.Get("put") != "INSERT ?" {
		t.Fatalf("sqlite put = %q", q.Get("put"))
	}
	if _, err := Load(fsys, "sql", "oracle"); err == nil {
		t.Fatal("unknown dialect accepted")
	}
}

func TestTimeRoundTrip(t *testing.T) {
	in := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	var out time.Time
	if err := TimeDest(&out).Scan(Time(store.SQLite, in)); err != nil {
		t.Fatal(err)
	}
	if !out.Equal(in.Truncate(time.Microsecond)) || out.Location() != time.UTC {
		t.Fatalf("sqlite round trip = %v", out)
	}
	if err := TimeDest(&out).Scan(Time(store.Postgres, in)); err != nil {
		t.Fatal(err)
	}
	if !out.Equal(in.Truncate(time.Microsecond)) {
		t.Fatalf("postgres round trip = %v", out)
	}
	if err := TimeDest(&out).Scan([]byte("2030-01-02 02:04:05.123456")); err != nil || !out.Equal(in.Truncate(time.Microsecond)) {
		t.Fatalf("text = %v, %v", out, err)
	}
}
