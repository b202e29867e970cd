// A server command that does not exist: one message, an error status, retries with backoff,
// and none of the language client's own notifications.
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { activate, waitFor } = require("./harness");

test("a missing server is reported once and retried with backoff", async () => {
  const { fake, api, extension } = await activate({
    "inkling.serverCommand": ["/nonexistent/inkling-server", "serve"],
    "inkling.restart.initialDelayMs": 50,
    "inkling.restart.maxDelayMs": 400,
  });
  try {
    assert.ok(await waitFor(() => api.failures() >= 4, 5000), `failures: ${api.failures()}`);
    assert.match(api.statusText(), /\$\(error\)/);
    assert.equal(api.status().state, "error");
    assert.match(api.status().message, /not found or is not executable/);
    const errors = fake.recorded.messages.filter((m) => m.level === "error" || m.level === "warning");
    assert.equal(errors.length, 1, JSON.stringify(fake.recorded.messages));
    assert.match(errors[0].text, /inkling-server/);
    assert.equal(api.isRunning(), false);
    // the stats command says the server is not running (and does not throw)
    await fake.module.commands.executeCommand("inkling.showStats");
    assert.match(fake.recorded.messages.at(-1).text, /not running/);
  } finally {
    await extension.deactivate();
  }
});
