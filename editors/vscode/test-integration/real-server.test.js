// The real inkling server (INKLING_TEST_SERVER: its command as a JSON array; optional
// INKLING_TEST_OPTIONS: settings as JSON). Skipped when not given (npm test stays offline);
// tests/test_vscode_extension.py runs it with the repository's Python.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { test } = require("node:test");
const { activate, waitFor, sleep } = require("./harness");

const server = process.env.INKLING_TEST_SERVER;

test("inline completions, accept, stats, settings and toggle with the real server", { skip: !server && "INKLING_TEST_SERVER is not set" }, async () => {
  const settings = {
    "inkling.serverCommand": JSON.parse(server),
    "inkling.languages": ["python"],
    ...JSON.parse(process.env.INKLING_TEST_OPTIONS || "{}"),
  };
  const { fake, api, extension } = await activate(settings);
  try {
    assert.ok(await waitFor(() => /\$\(check\)/.test(api.statusText()), 90000),
      `not ready: ${api.statusText()} ${JSON.stringify(api.status())}\n${fake.recorded.output.join("\n")}`);
    // the accept command is the language client's, forwarding to the server
    assert.ok(fake.recorded.commands.has("inkling.accept"));
    assert.equal(fake.recorded.inlineProviders.length, 1);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inkling-vscode-"));
    const doc = fake.openDocument(path.join(dir, "demo.py"), "def add(a, b):\n    return a\n");
    await sleep(200);                               // didOpen reaches the server
    const { provider } = fake.recorded.inlineProviders[0];
    const { CancellationTokenSource, Position } = fake.module;
    const result = await provider.provideInlineCompletionItems(doc, new Position(1, 12),
      { triggerKind: 0, selectedCompletionInfo: undefined }, new CancellationTokenSource().token);
    const items = Array.isArray(result) ? result : result.items;
    // an invoked request (VS Code's when cycling) gets several different drafts
    assert.ok(items.length >= 2, `drafts to cycle through: ${JSON.stringify(items.map((i) => i.insertText))}`);
    assert.equal(new Set(items.map((i) => i.insertText)).size, items.length);
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

    // the stats command shows them
    await fake.module.commands.executeCommand("inkling.showStats");
    assert.match(fake.recorded.messages.at(-1).text, /1 accepted/);

    // a changed option is sent with workspace/didChangeConfiguration; the server applies it
    const applied = () => fake.recorded.output.filter((l) => l.includes("configuration applied")).length;
    const before = applied();
    await fake.module.workspace.getConfiguration("inkling").update("completion.maxNewTokens", 8);
    assert.ok(await waitFor(() => applied() > before, 5000), fake.recorded.output.join("\n"));
    // an invalid one is named by the server (its showMessage), the previous value kept
    await fake.module.workspace.getConfiguration("inkling").update("completion.maxNewTokens", -1);
    assert.ok(await waitFor(() => fake.recorded.messages.some((m) => /max_new_tokens/.test(m.text)), 5000),
      JSON.stringify(fake.recorded.messages));

    // toggling stops the server and shows "off"
    await fake.module.commands.executeCommand("inkling.toggle");
    assert.ok(await waitFor(() => !api.isRunning() && api.status().state === "off", 10000), api.statusText());
    assert.equal(api.failures(), 0, "stopping on purpose is no failure");
  } finally {
    await extension.deactivate();
  }
});
