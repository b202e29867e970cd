// The extension activates for any language (inkling.languages decides which it completes)
// and starts the server only once a document of those languages is open: no model loads in
// a window without one, and widening the setting is enough for another language.
"use strict";

const assert = require("node:assert/strict");
const os = require("node:os");
const path = require("node:path");
const { test } = require("node:test");
const { activate, waitFor, sleep } = require("./harness");

test("no server until a document of inkling.languages opens; a widened list counts", async () => {
  const { fake, api, extension } = await activate({
    "inkling.serverCommand": ["/nonexistent/inkling-server", "serve"],
    "inkling.languages": ["python", "go"],
    "inkling.restart.initialDelayMs": 50,
    "inkling.restart.maxDelayMs": 400,
  }, "markdown");
  try {
    await sleep(300);
    assert.equal(api.starts(), 0, "no server for a Markdown file");
    assert.equal(api.failures(), 0);
    assert.equal(fake.recorded.messages.length, 0, JSON.stringify(fake.recorded.messages));
    fake.openDocument(path.join(os.tmpdir(), "main.go"), "package main\n", "go");
    assert.ok(await waitFor(() => api.failures() >= 1, 5000), "the Go file starts the server (here: tries to)");
    assert.match(api.status().message, /inkling-server/);
  } finally {
    await extension.deactivate();
  }
});
