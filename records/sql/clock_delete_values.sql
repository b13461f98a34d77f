-- The field clocks of a deleted record: nothing reads them while it is
-- deleted (a change of its object is stale by its tombstone, a restore clears
-- them and starts afresh), so only its $-clocks ($deleted, $deleted_here,
-- $seen), which are read, stay.
DELETE FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID = ? AND Field NOT LIKE '$%'
