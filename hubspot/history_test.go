package hubspot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

// HubSpot's documented shape of propertiesWithHistory, in any order and
// with numeric ids, parses into versions newest first.
func TestObjectHistoryJSON(t *testing.T) {
	body := `{"id":"1","properties":{"firstname":"B"},"propertiesWithHistory":{"firstname":[
		{"value":"A","timestamp":"2026-01-01T00:00:00.000Z","sourceType":"INTEGRATION","sourceId":"app:77"},
		{"value":"B","timestamp":"2026-01-02T00:00:00.000Z","sourceType":"CRM_UI","sourceId":"userId:5","updatedByUserId":5}]}}`
	var o hubspot.Object
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	h := o.History["firstname"]
	if len(h) != 2 || h[0].Value != "B" || h[1].Value != "A" || h[0].UpdatedByUserID != "5" {
		t.Fatalf("history = %+v; want B then A", h)
	}
	if !h[1].WrittenBy("77") || h[0].WrittenBy("77") || h[1].WrittenBy("") || h[1].WrittenBy("7") {
		t.Fatal("WrittenBy does not tell the app's own versions")
	}
	if want := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC); !h[0].Timestamp.Equal(want) {
		t.Fatalf("timestamp = %v", h[0].Timestamp)
	}
}

func FuzzObjectJSON(f *testing.F) {
	f.Add(`{"id":"1","propertiesWithHistory":{"a":[{"value":"x","timestamp":"2026-01-01T00:00:00Z","sourceType":"API"}]}}`)
	f.Add(`{"id":2,"properties":{"a":null},"propertiesWithHistory":{"a":null}}`)
	f.Add(`{"propertiesWithHistory":{"a":[{"value":1,"timestamp":"bad","sourceId":3}]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var o hubspot.Object
		if json.Unmarshal([]byte(s), &o) != nil {
			return
		}
		for k, vs := range o.History {
			for i := 1; i < len(vs); i++ {
				if vs[i].Timestamp.After(vs[i-1].Timestamp) {
					t.Fatalf("history of %s not newest first: %+v", k, vs)
				}
			}
		}
	})
}

func TestSimHistoryAndList(t *testing.T) {
	t.Parallel()
	c, sim := simClient(t, hubspotsim.Config{AppID: 77})
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		id, err := sim.UserCreate("contacts", map[string]string{"email": fmt.Sprintf("l%d@x.com", i), "firstname": "U"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	res, err := c.BatchReadWithHistory(ctx, hubspot.Contacts, ids[:2], []string{"firstname"}, []string{"firstname"})
	if err != nil {
		t.Fatal(err)
	}
	o := res.ResultByID(ids[0])
	if o == nil || len(o.History["firstname"]) != 1 || o.History["firstname"][0].SourceType != "CRM_UI" {
		t.Fatalf("read with history = %+v", o)
	}
	if _, err := c.BatchReadWithHistory(ctx, hubspot.Contacts, make([]string, 51), nil, nil); !errors.Is(err, hubspot.ErrBatchTooLarge) {
		t.Fatalf("51 inputs with history: %v; want ErrBatchTooLarge", err)
	}
	var seen []string
	after := ""
	for {
		p, err := c.List(ctx, hubspot.Contacts, []string{"email"}, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Results {
			seen = append(seen, o.ID)
		}
		if p.After == "" {
			break
		}
		after = p.After
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) {
		t.Fatalf("listed %v; want %v in order", seen, ids)
	}
	if _, err := c.List(ctx, hubspot.Contacts, nil, "", 101); !errors.Is(err, hubspot.ErrInvalidArgument) {
		t.Fatalf("limit 101: %v", err)
	}
}
