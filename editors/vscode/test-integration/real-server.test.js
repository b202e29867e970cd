// The real inkling server (INKLING_TEST_SERVER: its command as a JSON array). Optional:
// INKLING_TEST_OPTIONS, settings the user has from the start (JSON: {"inkling.model.path": ...});
// INKLING_TEST_DEFAULTS, the options tree `inkling serve` holds with those and nothing else
// (snake_case, as inkling/stats reports it). Skipped when not given (npm test stays offline);
// tests/editors/test_vscode_extension.py runs it with the repository's Python.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { test } = require("node:test");
const { activate, waitFor, sleep, provide } = require("./harness");

const server = process.env.INKLING_TEST_SERVER;

test("default settings, inline completions, accept, stats, settings and toggle with the real server", { skip: !server && "INKLING_TEST_SERVER is not set" }, async () => {
  const settings = {
    "inkling.serverCommand": JSON.parse(server),
    "inkling.languages": ["python"],
    ...JSON.parse(process.env.INKLING_TEST_OPTIONS || "{}"),
  };
  const defaults = JSON.parse(process.env.INKLING_TEST_DEFAULTS || "null");
  const { fake, api, extension } = await activate(settings);
  try {
    assert.ok(await waitFor(() => /\$\(check\)/.test(api.statusText()), 90000),
      `not ready: ${api.statusText()} ${JSON.stringify(api.status())}\n${fake.recorded.output.join("\n")}`);
    // with the extension's default settings the server runs with its own defaults
    if (defaults) {
      assert.deepEqual((await api.stats()).options, defaults);
    }
    // the accept command is the language client's, forwarding to the server
    assert.ok(fake.recorded.commands.has("inkling.accept"));
    assert.equal(fake.recorded.inlineProviders.length, 1);

    // the user picks the decoder that makes drafts to cycle through, and a small budget
    const config = fake.module.workspace.getConfiguration("inkling");
    const applied = () => fake.recorded.output.filter((l) => l.includes("configuration applied")).length;
    let before = applied();
    await config.update("completion.decoder", "branches");
    await config.update("completion.maxNewTokens", 8);
    assert.ok(await waitFor(() => applied() >= before + 2, 10000), fake.recorded.output.join("\n"));

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inkling-vscode-"));
    const doc = fake.openDocument(path.join(dir, "demo.py"), "def add(a, b):\n    return a\n");
    await sleep(200);                               // didOpen reaches the server
    const items = await provide(fake, doc, 1, 12, 0);
    // an invoked request (VS Code's when cycling) gets several different drafts
    assert.ok(items.length >= 2, `drafts to cycle through: ${JSON.stringify(items.map((i) => i.insertText))}`);
    assert.equal(new Set(items.map((i) => i.insertText)).size, items.length);
    // the server says how many were asked for and, when fewer came, why
    const last = await api.lastCompletion();
    assert.equal(last.asked, 3);
    assert.equal(Boolean(last.shortfall), items.length < 3, JSON.stringify(last));
    const item = items[0];
    assert.equal(typeof item.insertText, "string");
    assert.equal(item.command.command, "inkling.accept");
    // the status bar shows the last latency
    assert.ok(await waitFor(() => /inkling \d+ ms/.test(api.statusText()), 5000), api.statusText());

    // VS Code runs the item's command after accepting: it reaches the server
    await fake.module.commands.executeCommand(item.command.command, ...item.command.arguments);
    const stats = await api.stats();
    assert.equal(stats.accepted, 1);
    assert.ok(stats.answered >= 1);
    if (defaults) {
      assert.deepEqual(stats.options, { ...defaults,
        completion: { ...defaults.completion, decoder: "branches", max_new_tokens: 8 } });
    }

    // the stats command shows them
    await fake.module.commands.executeCommand("inkling.showStats");
    assert.match(fake.recorded.messages.at(-1).text, /1 accepted/);

    // an invalid setting is named by the server (its showMessage), the previous value kept
    before = applied();
    await config.update("completion.maxNewTokens", -1);
    assert.ok(await waitFor(() => fake.recorded.messages.some((m) => /max_new_tokens/.test(m.text)), 5000),
      JSON.stringify(fake.recorded.messages));

    // toggling off keeps the server (and its model): nothing is asked while off
    await fake.module.commands.executeCommand("inkling.toggle");
    assert.equal(api.status().state, "ready");
    assert.match(api.statusText(), /circle-slash/);
    assert.equal(await provide(fake, doc, 1, 12, 0), null);
    assert.equal(api.isRunning(), true);
    assert.equal(api.failures(), 0, "stopping on purpose is no failure");
  } finally {
    await extension.deactivate();
  }
});
