import assert from "node:assert/strict";
import { test } from "node:test";

import { formatStats, formatStatus, stderrLevel, summarizeStats } from "../status";

test("status bar: starting, loading with progress, ready with latency, busy", () => {
  assert.match(formatStatus(undefined).text, /inkling/);
  assert.equal(formatStatus({ state: "loading", message: "loading model", progress: 40 }).text, "$(loading~spin) inkling 40%");
  assert.equal(formatStatus({ state: "loading", progress: null }).text, "$(loading~spin) inkling");
  const ready = formatStatus({ state: "ready", message: "3 draft(s)", latencyMs: 41.6 });
  assert.equal(ready.text, "$(check) inkling 42 ms");
  assert.match(ready.tooltip, /last completion 42 ms/);
  assert.match(ready.tooltip, /3 draft\(s\)/);
  assert.equal(ready.severity, "normal");
  assert.equal(formatStatus({ state: "ready", latencyMs: null }).text, "$(check) inkling");
  assert.equal(formatStatus({ state: "busy", message: "completing" }).text, "$(sync~spin) inkling");
});

test("status bar: errors are red and keep their message in the tooltip; off is a warning", () => {
  const err = formatStatus({ state: "error", message: "model folder /x not found" });
  assert.equal(err.text, "$(error) inkling");
  assert.equal(err.severity, "error");
  assert.match(err.tooltip, /model folder \/x not found/);
  const long = formatStatus({ state: "error", message: "x".repeat(1000) });
  assert.ok(long.tooltip.length < 400);
  assert.equal(formatStatus({ state: "off" }).severity, "warning");
  assert.equal(formatStatus({ state: "whatever" }).text, "inkling: whatever");
});

test("stats as lines and as one line", () => {
  const stats = {
    requests: 10, cancelled: 2, answered: 7, accepted: 3, errors: 1,
    latency_ms: { p50: 12.25, p95: 80, count: 7 }, state: "ready", documents: 2, refreshes: 4, cache_mode: "pie",
  };
  const lines = formatStats(stats);
  assert.ok(lines.some((l) => l.includes("accepted   3")));
  assert.ok(lines.some((l) => l.includes("p50 12.3 ms") && l.includes("p95 80 ms") && l.includes("(7 completions)")));
  assert.ok(lines.some((l) => l.includes("pie, 4 idle refreshes")));
  assert.equal(summarizeStats(stats),
    "inkling: 7 answered, 3 accepted, 2 cancelled, 1 errors; latency p50 12.3 ms, p95 80 ms");
  const empty = formatStats({ latency_ms: { p50: null, p95: null, count: 0 } });
  assert.ok(empty.some((l) => l.includes("p50 - ")));
  assert.ok(!empty.some((l) => l.startsWith("options")));
  const options = { cache: { mode: "pie" } };
  assert.ok(formatStats({ ...stats, options }).includes(`options    ${JSON.stringify(options)}`));
});

test("status bar: a screen reader hears the state in words (ready and the latency)", () => {
  assert.equal(formatStatus({ state: "ready", latencyMs: 41.6 }).label, "inkling ready, last completion 42 ms");
  assert.equal(formatStatus({ state: "loading", progress: 40 }).label, "inkling loading 40%");
  assert.equal(formatStatus({ state: "off", message: "off for markdown" }).label, "inkling off for markdown");
  assert.match(formatStatus({ state: "off", message: "off for markdown" }).tooltip, /off for markdown/);
});

test("the server's standard error is logged at its logging level, not all as errors", () => {
  assert.equal(stderrLevel("2025-01-01 12:00:00,000 inkling.server INFO model loaded"), "info");
  assert.equal(stderrLevel("2025-01-01 12:00:00,000 inkling.server WARNING slow"), "warn");
  assert.equal(stderrLevel("2025-01-01 12:00:00,000 pygls.protocol ERROR failed"), "error");
  assert.equal(stderrLevel("Traceback (most recent call last):", "info"), "error");
  assert.equal(stderrLevel("  File \"x.py\", line 1", "error"), "error");
  assert.equal(stderrLevel("loading model: ### 40%", "info"), "info");
});
