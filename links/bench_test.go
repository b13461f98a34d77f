package links_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
)

// BenchmarkLink measures Link of a record with no link yet (what the
// SyncWorker writes for each HubSpot creation), one transaction each.
//
//	go test ./links -run '^$' -bench BenchmarkLink -benchtime 2000x
func BenchmarkLink(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			l := links.New(newStore(b, d))
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if err := l.Link(ctx, "hubspot", "contacts", fmt.Sprintf("r%08d", i), fmt.Sprintf("e%08d", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
