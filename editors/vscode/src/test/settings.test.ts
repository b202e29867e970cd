import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { camelCase, expandPath, needsRestart, SERVER_SETTINGS, serverCommand, toOptionsTree, userValue } from "../settings";

test("flat settings become the server's nested options tree", () => {
  const tree = toOptionsTree({
    "model.path": "/models/x",
    "completion.drafts": 3,
    "completion.automaticDrafts": 1,
    "completion.decoder": "branches",
    "cache.mode": "pie",
    "server.debounceMinMs": 30,
  });
  assert.deepEqual(tree, {
    model: { path: "/models/x" },
    completion: { drafts: 3, automaticDrafts: 1, decoder: "branches" },
    cache: { mode: "pie" },
    server: { debounceMinMs: 30 },
  });
});

test("snake_case keys become camelCase, unknown sections and empty values are left out", () => {
  const tree = toOptionsTree({
    "completion.max_new_tokens": 16,
    "completion.stale": undefined,
    "cache.budgetMb": null,
    "languages.python": true,
    "enable": true,
    "model.device": { nested: 1 },
  });
  assert.deepEqual(tree, { completion: { maxNewTokens: 16 } });
  assert.equal(camelCase("idle_refresh_ms"), "idleRefreshMs");
  assert.equal(camelCase("alreadyCamel"), "alreadyCamel");
});

test("every server setting is contributed in package.json, and every contributed one is mapped", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
  const contributed = Object.keys(pkg.contributes.configuration.properties).map((k) => k.replace(/^inkling\./, ""));
  for (const key of SERVER_SETTINGS) {
    assert.ok(contributed.includes(key), `${key} is not in package.json`);
  }
  const clientOnly = new Set(["enable", "triggerMode", "serverCommand", "pythonPath", "languages", "trace.server",
    "restart.initialDelayMs", "restart.maxDelayMs"]);
  for (const key of contributed) {
    assert.ok(clientOnly.has(key) || SERVER_SETTINGS.includes(key), `${key} is neither mapped nor client-only`);
  }
});

test("contributed defaults are the server's own (tests/editors/test_vscode_extension.py checks every one)", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
  const props = pkg.contributes.configuration.properties;
  const flat: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    flat[key] = props[`inkling.${key}`].default;
  }
  const tree = toOptionsTree(flat);
  assert.deepEqual(tree.completion.drafts, 3);
  assert.deepEqual(tree.completion.automaticDrafts, 1);
  assert.deepEqual(tree.model, { path: "", device: "auto", dtype: "auto", forward: "auto", threads: 0 });
  assert.equal(tree.cache.mode, "pie");
  assert.equal(tree.cache.staleThreshold, 0.95);
  assert.equal(tree.completion.decoder, "beam");
  assert.equal(tree.completion.draft, "suffix");
  assert.equal(tree.completion.monitor, "on");
});

test("only the values the user set are sent: folder over workspace over user settings", () => {
  assert.equal(userValue(undefined), undefined);
  assert.equal(userValue({ defaultValue: "pie" }), undefined);
  assert.equal(userValue({ defaultValue: "pie", globalValue: "full" }), "full");
  assert.equal(userValue({ defaultValue: "pie", globalValue: "full", workspaceValue: "naive" }), "naive");
  assert.equal(userValue({ globalValue: "full", workspaceValue: "naive", workspaceFolderValue: "pie" }), "pie");
  assert.equal(userValue({ defaultValue: 3, globalValue: 3 }), 3, "set to the default's value is still set");
  const inspected: Record<string, { defaultValue: unknown; globalValue?: unknown }> = {
    "completion.drafts": { defaultValue: 3 },
    "completion.decoder": { defaultValue: "greedy", globalValue: "branches" },
    "cache.mode": { defaultValue: "pie" },
  };
  const flat: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    flat[key] = userValue(inspected[key]);
  }
  assert.deepEqual(toOptionsTree(flat), { completion: { decoder: "branches" } });
});

test("the server command: pythonPath wins, else serverCommand, else `inkling serve`", () => {
  assert.deepEqual(serverCommand(["inkling", "serve"], ""), { command: "inkling", args: ["serve"] });
  assert.deepEqual(serverCommand(["/opt/inkling/bin/inkling", "serve", "--tcp", "0"], undefined),
    { command: "/opt/inkling/bin/inkling", args: ["serve", "--tcp", "0"] });
  assert.deepEqual(serverCommand("inkling  serve", ""), { command: "inkling", args: ["serve"] });
  assert.deepEqual(serverCommand([], ""), { command: "inkling", args: ["serve"] });
  assert.deepEqual(serverCommand(["inkling", "serve"], " /venv/bin/python "),
    { command: "/venv/bin/python", args: ["-m", "inkling.lsp.cli", "serve"] });
  assert.deepEqual(serverCommand(["x"], "${workspaceFolder}/.venv/bin/python", { workspaceFolder: "/ws" }),
    { command: "/ws/.venv/bin/python", args: ["-m", "inkling.lsp.cli", "serve"] });
});

test("paths expand ${workspaceFolder}, ${userHome} and ~/", () => {
  assert.equal(expandPath("~/venv/bin/python", { userHome: "/home/u" }), "/home/u/venv/bin/python");
  assert.equal(expandPath("${userHome}/x", { userHome: "/home/u" }), "/home/u/x");
  assert.equal(expandPath("${workspaceFolder}/x", {}), "${workspaceFolder}/x");
  assert.equal(expandPath("a~/b", { userHome: "/h" }), "a~/b");
});

test("command, python and language changes restart the server; options do not", () => {
  assert.equal(needsRestart((n) => n === "pythonPath"), true);
  assert.equal(needsRestart((n) => n === "serverCommand"), true);
  assert.equal(needsRestart((n) => n === "languages"), true);
  assert.equal(needsRestart((n) => n === "completion.drafts"), false);
});
