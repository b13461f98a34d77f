package relay

import (
	"context"
	"embed"
	"fmt"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// supersededBy returns the Seq of a later event of ev's record that the relay
// already delivered, or 0. Only a re-queued dead letter (its Lane moved past
// its Seq) can come after a later event of its record, so only it is looked
// up: an event in its first lane costs no query.
//
// The later event is found while it is kept: cleanup deletes processed
// internal events after their retention (7 days by default), and a dead
// letter re-queued after that is delivered.
func (r *Relay) supersededBy(ctx context.Context, ev store.InternalEvent) (int64, error) {
	if ev.Lane == ev.Seq {
		return 0, nil
	}
	var seq int64
	if err := r.st.DB().QueryRowContext(ctx, r.q.Get("newer_delivered"), ev.ObjectType, ev.RecordID, ev.Seq).Scan(&seq); err != nil {
		return 0, fmt.Errorf("relay: look for a delivered event after %s: %w", ev.ID, err)
	}
	return seq, nil
}

func loadQueries(d store.Dialect) (*dialectsql.Queries, error) {
	return dialectsql.Load(sqlFS, "sql", d)
}
