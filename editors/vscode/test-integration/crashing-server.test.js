// A server that starts and dies: one message, an error status, restarts with backoff.
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { activate, waitFor } = require("./harness");

test("a crashing server is reported once and restarted with backoff", async () => {
  const crash = "process.stdin.resume(); setTimeout(() => process.exit(3), 30)";
  const { fake, api, extension } = await activate({
    "inkling.serverCommand": [process.execPath, "-e", crash],
    "inkling.restart.initialDelayMs": 50,
    "inkling.restart.maxDelayMs": 400,
  });
  try {
    assert.ok(await waitFor(() => api.failures() >= 3, 8000), `failures: ${api.failures()}`);
    assert.equal(api.status().state, "error");
    const shown = fake.recorded.messages.filter((m) => m.level !== "info");
    assert.equal(shown.length, 1, JSON.stringify(fake.recorded.messages));
    // "restart now" starts afresh (and forgets the failure count)
    await fake.module.commands.executeCommand("inkling.restart");
    assert.ok(api.failures() <= 1);
  } finally {
    await extension.deactivate();
  }
});
