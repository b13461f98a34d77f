#!/usr/bin/env bash
# Peak memory of one `hubsync serve` replica with a large outbound backlog
# (issue 16: < 150 MB RSS with 1M pending events).
#
#   scripts/memory-backlog.sh [PENDING] [SECONDS]
#
# Creates the PostgreSQL database hubsync_mem (dropped first) on
# $PGHOST:$PGPORT (default 127.0.0.1:5432, user postgres), migrates it, loads
# PENDING (default 1,000,000) pending outbound contact creations in one INSERT,
# starts the HubSpot simulator and one replica against it, lets it work for
# SECONDS (default 120) and prints the replica's peak RSS (VmHWM) and how many
# events it processed. Needs psql and go.
set -euo pipefail
cd "$(dirname "$0")/.."
PENDING="${1:-1000000}"
SECONDS_RUN="${2:-120}"
PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PGHOST PGPORT PGUSER
DB=hubsync_mem
URL="postgres://$PGUSER@$PGHOST:$PGPORT/$DB?sslmode=disable"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/hubsync" ./cmd/hubsync
psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
HUBSYNC_DATABASE_URL="$URL" "$work/hubsync" migrate >/dev/null
echo "memory: loading $PENDING pending outbound events"
psql -q -d "$DB" <<SQL
INSERT INTO _System_IntegrationOutbound
    (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, RetryCount,
     CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
SELECT 'mem-' || lpad(g::text, 10, '0'), 'hubspot', 'contacts', 'rec-' || g, 'create',
       jsonb_build_object('id', 'rec-' || g, 'version', 1,
         'fields', jsonb_build_object('email', 'mem' || g || '@example.com', 'first_name', 'Mem', 'last_name', 'Ory ' || g)),
       'pending', 0, now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', 0, 1, 1
FROM generate_series(1, $PENDING) AS g;
ANALYZE _System_IntegrationOutbound;
SQL

export HUBSPOT_ACCESS_TOKEN=pat-sim-00000000-0000-0000-0000-000000000000 HUBSPOT_CLIENT_SECRET=sim-client-secret HUBSPOT_APP_ID=1000
"$work/hubsync" sim -addr 127.0.0.1:18090 -rate-limit 190 >"$work/sim.log" 2>&1 &
HUBSYNC_DATABASE_URL="$URL" HUBSPOT_API_BASE=http://127.0.0.1:18090 HUBSYNC_ADDR=127.0.0.1:18080 \
	HUBSYNC_HUBSPOT_RATE_LIMIT=190 HUBSYNC_ADMIN_TOKEN=memory-admin-token-0123456789 \
	"$work/hubsync" serve >"$work/serve.log" 2>&1 &
pid=$!
peak=0
for _ in $(seq 1 "$SECONDS_RUN"); do
	sleep 1
	kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
	[ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
	kill -0 "$pid" 2>/dev/null || { echo "memory: serve exited; log:"; tail -20 "$work/serve.log"; exit 1; }
done
done_n=$(psql -Atq -d "$DB" -c "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status = 'processed'")
left=$(psql -Atq -d "$DB" -c "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status <> 'processed'")
echo "memory: $PENDING pending at start, $done_n processed in ${SECONDS_RUN}s, $left left"
echo "memory: peak RSS (VmHWM) $((peak / 1024)) MiB"
