#!/usr/bin/env bash
# Outbound throughput in QStash dispatch mode with 3 worker replicas against
# the simulator's rate limit (issue 14).
#
#   scripts/bench-qstash.sh [EVENTS] [RATE_LIMIT]
#
# Creates the PostgreSQL database hubsync_qbench (dropped first) on
# $PGHOST:$PGPORT (default 127.0.0.1:5432, user postgres), loads EVENTS
# (default 1000) pending outbound contact creations, starts the HubSpot
# simulator with the QStash emulator (RATE_LIMIT calls per 10 s, default 100)
# and three `hubsync serve` replicas in qstash mode, each QStash's worker URL
# for what it publishes, waits until every event is processed and prints
# events/s, HubSpot calls/s against the limit, 429s and QStash's figures.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS="${1:-1000}"
LIMIT="${2:-100}"
PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PGHOST PGPORT PGUSER
DB=hubsync_qbench
URL="postgres://$PGUSER@$PGHOST:$PGPORT/$DB?sslmode=disable"
SIM=127.0.0.1:18690
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/hubsync" ./cmd/hubsync
psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
HUBSYNC_DATABASE_URL="$URL" "$work/hubsync" migrate >/dev/null

export HUBSPOT_ACCESS_TOKEN=pat-sim-00000000-0000-0000-0000-000000000000 HUBSPOT_CLIENT_SECRET=sim-client-secret HUBSPOT_APP_ID=1000
export QSTASH_URL="http://$SIM" QSTASH_TOKEN=eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=
export QSTASH_CURRENT_SIGNING_KEY=sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r QSTASH_NEXT_SIGNING_KEY=sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs
"$work/hubsync" sim -addr "$SIM" -qstash -rate-limit "$LIMIT" >"$work/sim.log" 2>&1 &
for _ in $(seq 1 50); do curl -sf "http://$SIM/_sim/counters" >/dev/null && break; sleep 0.2; done

# QStash is paced at 80 % of the budget, as the demo does, leaving the rest
# for the SyncWorker's reads.
for i in 1 2 3; do
	port=$((18690 + i))
	HUBSYNC_DATABASE_URL="$URL" HUBSPOT_API_BASE="http://$SIM" HUBSYNC_ADDR="127.0.0.1:$port" \
		HUBSYNC_HUBSPOT_RATE_LIMIT="$LIMIT" HUBSYNC_DISPATCH=qstash \
		HUBSYNC_WORKER_URL="http://127.0.0.1:$port/qstash/hubspot" \
		HUBSYNC_FLOW_CONTROL_RATE=$((LIMIT * 8 / 10)) HUBSYNC_FLOW_CONTROL_PERIOD=10s \
		HUBSYNC_QSTASH_RETRY_DELAY='pow(2, retried) * 1000' HUBSYNC_QSTASH_RETRIES=20 \
		"$work/hubsync" serve -webhooks=false >"$work/serve$i.log" 2>&1 &
done
for i in 1 2 3; do
	for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$((18690 + i))/healthz" >/dev/null && break; sleep 0.2; done
done

echo "qstash bench: $EVENTS pending outbound events, 3 replicas, simulator limit $LIMIT calls/10 s"
start=$(date +%s.%N)
psql -q -d "$DB" <<SQL
INSERT INTO _System_IntegrationOutbound
    (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, RetryCount,
     CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
SELECT 'qb-' || lpad(g::text, 10, '0'), 'hubspot', 'contacts', 'rec-' || g, 'create',
       jsonb_build_object('id', 'rec-' || g, 'version', 1,
         'fields', jsonb_build_object('email', 'qb' || g || '@example.com', 'first_name', 'Q', 'last_name', 'Bench ' || g)),
       'pending', 0, now(), now(), now(), 0, 1, 1
FROM generate_series(1, $EVENTS) AS g;
SQL
while :; do
	left=$(psql -Atq -d "$DB" -c "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status NOT IN ('processed', 'failed')")
	[ "$left" -eq 0 ] && break
	sleep 1
done
end=$(date +%s.%N)
secs=$(echo "$end - $start" | bc -l)
counters=$(curl -s "http://$SIM/_sim/counters")
qstats=$(curl -s "http://$SIM/_sim/qstash/stats")
failed=$(psql -Atq -d "$DB" -c "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status = 'failed'")
calls=$(echo "$counters" | python3 -c 'import json,sys; c=json.load(sys.stdin); print(c["requests"])')
r429=$(echo "$counters" | python3 -c 'import json,sys; c=json.load(sys.stdin); print(sum(c["rateLimited429"].values()))')
printf 'qstash bench: %d events in %.1f s = %.1f events/s; %d HubSpot calls = %.2f calls/s of %.1f allowed; %d × 429; %d dead letters\n' \
	"$EVENTS" "$secs" "$(echo "$EVENTS / $secs" | bc -l)" "$calls" "$(echo "$calls / $secs" | bc -l)" "$(echo "$LIMIT / 10" | bc -l)" "$r429" "$failed"
echo "qstash bench: emulator $qstats"
