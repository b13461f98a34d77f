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

func TestBind(t *testing.T) {
	q := "SELECT '@x' -- @y\n FROM t WHERE a = @a AND b = @b_2 OR a2 = @a"
	got, names := Bind(store.Postgres, q)
	if want := "SELECT '@x' -- @y\n FROM t WHERE a = $1 AND b = $2 OR a2 = $1"; got != want {
		t.Fatalf("Bind postgres = %q, want %q", got, want)
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b_2" {
		t.Fatalf("postgres names = %q", names)
	}
	got, names = Bind(store.MySQL, q)
	if want := "SELECT '@x' -- @y\n FROM t WHERE a = ? AND b = ? OR a2 = ?"; got != want {
		t.Fatalf("Bind mysql = %q, want %q", got, want)
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b_2" || names[2] != "a" {
		t.Fatalf("mysql names = %q", names)
	}
}

func TestReadLayers(t *testing.T) {
	shared := fstest.MapFS{"sql/a.sql": {Data: []byte("A")}, "sql/b.sql": {Data: []byte("B")}, "sql/x.txt": {Data: []byte("X")}}
	own := fstest.MapFS{"b.sql": {Data: []byte("B2")}, "c.sql": {Data: []byte("C")}}
	got, err := Read(".sql", Layer{FS: shared, Dir: "sql"}, Layer{FS: own})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a"] != "A" || got["b"] != "B2" || got["c"] != "C" {
		t.Fatalf("Read = %q", got)
	}
	if _, err := Read(".sql", Layer{FS: own, Dir: "missing"}); err == nil {
		t.Fatal("a missing required layer was accepted")
	}
	if _, err := Read(".sql", Layer{FS: own, Dir: "missing", Optional: true}); err != nil {
		t.Fatalf("a missing optional layer: %v", err)
	}
}

func TestNullTime(t *testing.T) {
	var p *time.Time
	if err := NullTimeDest(&p).Scan(nil); err != nil || p != nil {
		t.Fatalf("NULL = %v, %v", p, err)
	}
	if err := NullTimeDest(&p).Scan(int64(1_000_000)); err != nil || p == nil || !p.Equal(time.Unix(1, 0)) {
		t.Fatalf("1s = %v, %v", p, err)
	}
	if NullTime(store.SQLite, nil) != nil || NullJSON(nil) != nil {
		t.Fatal("nil must bind NULL")
	}
}
