package records

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// TestNumbers: numbers read back as json.Number on every database, which the
// snapshots, the mapping and the HTTP API render as numbers, and an update
// that only respells a number (as jsonb and MySQL do) writes no new version.
func TestNumbers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		in := map[string]any{"amount": 2.5e-7, "big": json.Number("12345678901234567890"), "e21": 1e21, "scaled": json.Number("2.50"), "n": 250}
		rec, err := b.svc.Insert(ctx, "deals", in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.svc.Get(ctx, "deals", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range got.Fields {
			if _, ok := v.(json.Number); !ok {
				t.Fatalf("field %s read back as %T, want json.Number", k, v)
			}
		}
		if got.Fields["big"] != json.Number("12345678901234567890") {
			t.Fatalf("big = %v; digits lost", got.Fields["big"])
		}
		// Snapshot: numbers stay JSON numbers, every digit kept in the payload.
		raw, err := outbox.Snapshot{ID: got.ID, Fields: got.Fields}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"big":12345678901234567890`) || !strings.Contains(string(raw), `"n":250`) {
			t.Fatalf("snapshot = %s", raw)
		}
		snap, err := outbox.ParseSnapshot(raw)
		if err != nil {
			t.Fatal(err)
		}
		// Mapping: the record's and the parsed snapshot's json.Number give the
		// same plain-decimal HubSpot value and no diff.
		obj, _ := mapping.Default().Lookup("deals")
		direct, err := obj.ToHubSpot(got.Fields)
		if err != nil {
			t.Fatal(err)
		}
		viaSnap, err := obj.ToHubSpot(snap.Fields)
		if err != nil {
			t.Fatal(err)
		}
		if direct["amount"] != "0.00000025" || viaSnap["amount"] != "0.00000025" {
			t.Fatalf("amount: from the record %q, from the snapshot %q", direct["amount"], viaSnap["amount"])
		}
		if diff, err := obj.Diff(snap.Fields, snap.Fields); err != nil || len(diff) != 0 {
			t.Fatalf("diff of equal snapshots = %v %v", diff, err)
		}
		if diff, err := obj.Diff(got.Fields, map[string]any{"amount": 0.5}); err != nil || diff["amount"] != "0.5" {
			t.Fatalf("diff json.Number → float64 = %v %v", diff, err)
		}
		// HTTP: numbers, not strings.
		h := httptest.NewRecorder()
		b.svc.Handler().ServeHTTP(h, httptest.NewRequest("GET", "/api/records/deals/"+rec.ID, nil))
		body, _ := io.ReadAll(h.Body)
		var out struct{ Fields map[string]any }
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if f, ok := out.Fields["n"].(float64); !ok || f != 250 || !strings.Contains(string(body), `"big":12345678901234567890`) {
			t.Fatalf("HTTP body = %s", body)
		}
		// Writing the same values, spelled as Go spells them, changes nothing.
		same, err := b.svc.Update(ctx, "deals", rec.ID, 1, map[string]any{"amount": 2.5e-7, "e21": 1e21, "scaled": 2.5, "n": 250.0})
		if err != nil {
			t.Fatal(err)
		}
		if same.Version != 1 {
			t.Fatalf("a respelling update wrote version %d: %v", same.Version, same.Fields)
		}
		if n := len(b.internal(t, rec.ID)); n != 1 {
			t.Fatalf("%d internal events, want only the create", n)
		}
		if upd, err := b.svc.Update(ctx, "deals", rec.ID, 1, map[string]any{"scaled": 2.51}); err != nil || upd.Version != 2 {
			t.Fatalf("a real change = %+v, %v", upd, err)
		}
	})
}

func TestSameNumber(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"2.50", "2.5", true}, {"1e+21", "1000000000000000000000", true}, {"2.5e-7", "0.00000025", true},
		{"-0", "0", true}, {"0.0e5", "0", true}, {"1E2", "100", true}, {"-1.5", "-15e-1", true},
		{"12345678901234567890", "12345678901234567891", false}, {"1", "-1", false}, {"1e1", "1e2", false},
		{"1e999999999999999999999", "1e999999999999999999999", true}, // equal text
		{"1e999999999999999999999", "1e999999999999999999998", false},
	} {
		if got := sameNumber(c.a, c.b); got != c.same {
			t.Errorf("sameNumber(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// FuzzSameNumber: any float64, however Go spells it, equals itself, and no
// literal makes canonNumber panic.
func FuzzSameNumber(f *testing.F) {
	f.Add(2.5e-7, "1e+21")
	f.Add(-0.0, "-00.0100e-0")
	f.Fuzz(func(t *testing.T, x float64, lit string) {
		canonNumber(lit)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		g := strconv.FormatFloat(x, 'g', -1, 64)
		for _, spelled := range []string{strconv.FormatFloat(x, 'e', -1, 64), strconv.FormatFloat(x, 'f', -1, 64), strings.ToUpper(strconv.FormatFloat(x, 'e', -1, 64))} {
			if !sameNumber(g, spelled) {
				t.Fatalf("%s and %s differ", g, spelled)
			}
		}
	})
}
