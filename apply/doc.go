// Package apply is the neutral layer between the inbound SyncWorker and the
// records an inbound change lands in: the Change, Result and Applier the two
// sides share, a typed Outcome, and Guarded, the Applier that keeps the
// correctness rules every Applier needs over any RecordStore.
//
// A source such as HubSpot neither orders its events nor delivers them once, so
// an Applier must (see Guarded): skip a field whose change is not newer than the
// last value applied to it (the monotonic per-field guard); remember deleted and
// merged-away external ids (tombstones), so a late, older change does not bring
// a record back; and redirect a newer change of a merged-away id to the
// survivor. hubsync's records service is Guarded over its own tables; an
// application with its own tables gets the same rules by implementing
// RecordStore:
//
//	type contactStore struct{ db *sql.DB }
//
//	func (s contactStore) InTx(ctx context.Context, fn func(apply.RecordTx) error) error {
//		tx, err := s.db.BeginTx(ctx, nil)
//		if err != nil {
//			return err
//		}
//		defer tx.Rollback()
//		if err := fn(contactTx{tx}); err != nil {
//			return err
//		}
//		return tx.Commit()
//	}
//
//	worker, err := inbound.NewWorker(inbound.WorkerConfig{
//		Applier: &apply.Guarded{Store: contactStore{db}}, …
//	})
//
// The RecordTx (contactTx above) needs four kinds of state, all written inside
// the one transaction:
//   - links from (source, object type, external id) to a local record id, with
//     MatchRecord to adopt an unlinked record by a unique field (email);
//   - a tombstone per external id (kind, survivor, time), which only moves
//     forward (PutTombstone never replaces a newer one);
//   - per record, a clock per field and DeletedClock, as timestamps of at least
//     microsecond precision, which AdvanceClocks never moves backwards and
//     which survive the record's deletion;
//   - the records themselves: LockRecord locks the row (SELECT … FOR UPDATE on
//     PostgreSQL and MySQL; SQLite's single writer already serializes) before
//     Guarded reads its clocks, and Create/Update/DeleteRecord write it. When the
//     application also pushes its changes out, these write their outbound events
//     with outbox.EnqueueTx in the same transaction; the context carries
//     outbox.WithSyncSource, so the change is not sent back to its source.
//
// When the RecordTx also implements SQLRecordTx (its DBTX is a transaction on
// the inbound queue's database), Guarded is a working FencedApplier: the
// SyncWorker completes each inbound event under its lease inside the apply's
// transaction, so a worker that lost its lease to another replica changes
// nothing. Without it, ApplyFenced answers ErrFenceUnsupported and the worker
// applies first and completes afterwards.
//
// The records package's recordTx (records/apply.go) is a complete example over
// SQL, and this package's tests run the rules against an in-memory one.
package apply
