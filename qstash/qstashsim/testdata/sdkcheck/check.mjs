// A manual check that the official QStash TypeScript SDK works against the
// emulator: its Client publishes (with dedup and flow control), lists and
// deletes DLQ entries, and its Receiver verifies deliveries signed with the
// current key and, after PUT /_sim/qstash/signing, with the next key.
// Not run by go test (it needs Node and the SDK package); see README.md here.
import { Client, Receiver } from "@upstash/qstash";
import http from "node:http";
import assert from "node:assert/strict";

const base = process.argv[2] ?? "http://127.0.0.1:8090";
const token = process.env.QSTASH_TOKEN ?? "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=";
const current = process.env.QSTASH_CURRENT_SIGNING_KEY ?? "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r";
const next = process.env.QSTASH_NEXT_SIGNING_KEY ?? "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs";
const both = new Receiver({ currentSigningKey: current, nextSigningKey: next });
const currentOnly = new Receiver({ currentSigningKey: current, nextSigningKey: "sig_not_the_next_key" });

const got = [];
const srv = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", async () => {
    const url = `http://127.0.0.1:${srv.address().port}${req.url}`;
    const sig = req.headers["upstash-signature"];
    const verify = (r) => r.verify({ signature: sig, body, url }).catch(() => false);
    got.push({ path: req.url, retried: req.headers["upstash-retried"], id: req.headers["upstash-message-id"],
      trace: req.headers["x-trace"], both: await verify(both), currentOnly: await verify(currentOnly) });
    if (req.url === "/fail") {
      res.statusCode = 489;
      res.setHeader("Upstash-NonRetryable-Error", "true");
    }
    res.end();
  });
});
await new Promise((r) => srv.listen(0, "127.0.0.1", r));
const dest = (p) => `http://127.0.0.1:${srv.address().port}${p}`;
const waitFor = async (n) => { for (let i = 0; i < 200 && got.length < n; i++) await new Promise((r) => setTimeout(r, 25)); };

const client = new Client({ baseUrl: base, token });
const first = await client.publishJSON({ url: dest("/w"), body: { eventId: "1" }, retries: 3, deduplicationId: "sdk-e1",
  headers: { "X-Trace": "t1" }, flowControl: { key: "sdk-check", parallelism: 12, rate: 150, period: "10s" } });
const dup = await client.publishJSON({ url: dest("/w"), body: { eventId: "1" }, deduplicationId: "sdk-e1" });
assert.equal(dup.messageId, first.messageId);
assert.equal(dup.deduplicated, true);
await waitFor(1);
await fetch(`${base}/_sim/qstash/signing`, { method: "PUT", body: JSON.stringify({ signWithNext: true }) });
await client.publishJSON({ url: dest("/w"), body: { eventId: "2" } });
await client.publishJSON({ url: dest("/fail"), body: { eventId: "3" }, retries: 2 });
await waitFor(3);
await fetch(`${base}/_sim/qstash/signing`, { method: "PUT", body: JSON.stringify({ signWithNext: false }) });

assert.equal(got.length, 3, JSON.stringify(got));
assert.deepEqual(got[0], { path: "/w", retried: "0", id: first.messageId, trace: "t1", both: true, currentOnly: true });
assert.equal(got[1].both, true, "next-key signature with both keys");
assert.equal(got[1].currentOnly, false, "next-key signature with the current key alone");
const dlq = await client.dlq.listMessages();
const entry = dlq.messages.find((m) => m.url === dest("/fail"));
assert.ok(entry, "the 489 message is in the DLQ");
assert.equal(entry.responseStatus, 489);
await client.dlq.delete(entry.dlqId);
const msg = await client.messages.get(first.messageId);
assert.equal(msg.messageId, first.messageId);
srv.close();
console.log("ok: the official SDK publishes, deduplicates, reads the DLQ and verifies both keys");
