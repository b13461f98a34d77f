package hubspot_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
)

func TestAdditionalEmails(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ; ;", nil},
		{"a@example.com", []string{"a@example.com"}},
		{" a@example.com ;b@example.com;; ", []string{"a@example.com", "b@example.com"}},
	} {
		o := hubspot.Object{Properties: map[string]string{hubspot.AdditionalEmailsProperty: c.in}}
		if got := o.AdditionalEmails(); !slices.Equal(got, c.want) {
			t.Errorf("AdditionalEmails(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := (&hubspot.Object{}).AdditionalEmails(); got != nil {
		t.Errorf("AdditionalEmails of an object read without the property = %q, want none", got)
	}
}

func TestMergedObjectIDs(t *testing.T) {
	o := hubspot.Object{Properties: map[string]string{
		hubspot.MergedObjectIDsProperty:  " 1002;;1003 ",
		hubspot.AdditionalEmailsProperty: "a@example.com",
	}}
	if got, want := o.MergedObjectIDs(), []string{"1002", "1003"}; !slices.Equal(got, want) {
		t.Errorf("MergedObjectIDs = %q, want %q", got, want)
	}
	if got := (&hubspot.Object{}).MergedObjectIDs(); got != nil {
		t.Errorf("MergedObjectIDs of an object read without the property = %q, want none", got)
	}
}

// FuzzAdditionalEmails: whatever HubSpot sends, every email returned is one
// of the list's items, trimmed and not blank, in the list's order.
func FuzzAdditionalEmails(f *testing.F) {
	for _, s := range []string{"", "a@b.c", " a@b.c ; d@e.f ;;", ";;;", "\t;\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := (&hubspot.Object{Properties: map[string]string{hubspot.AdditionalEmailsProperty: s}}).AdditionalEmails()
		var want []string
		for _, item := range strings.Split(s, ";") {
			if e := strings.TrimSpace(item); e != "" {
				want = append(want, e)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("AdditionalEmails(%q) = %q, want %q", s, got, want)
		}
		for _, e := range got {
			if e == "" || strings.Contains(e, ";") || e != strings.TrimSpace(e) {
				t.Fatalf("AdditionalEmails(%q) returned %q", s, e)
			}
		}
	})
}
