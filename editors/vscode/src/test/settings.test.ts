import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import {
  attaches, camelCase, expandPath, needsRestart, SERVER_SETTINGS, serverCommand, serverSettings, toOptionsTree, userValue,
} from "../settings";

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

/** package.json's settings, from every section of `contributes.configuration`. */
function contributed(): Record<string, { default: unknown }> {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
  return Object.assign({}, ...pkg.contributes.configuration.map((s: { properties: object }) => s.properties));
}

test("the server settings are package.json's in the options tree's sections, one or several", () => {
  const properties = { "inkling.enable": {}, "inkling.trace.server": {}, "inkling.model.path": {},
    "inkling.server.debounceMinMs": {}, "inkling.completion.drafts": {}, "inkling.restart.maxDelayMs": {} };
  const expected = ["model.path", "server.debounceMinMs", "completion.drafts"];
  assert.deepEqual(serverSettings({ contributes: { configuration: { properties } } }), expected);
  const [a, b] = [Object.entries(properties).slice(0, 3), Object.entries(properties).slice(3)];
  assert.deepEqual(serverSettings({ contributes: { configuration: [
    { properties: Object.fromEntries(a) }, { properties: Object.fromEntries(b) }] } }), expected);
  const keys = Object.keys(contributed());
  assert.equal(SERVER_SETTINGS.length, keys.filter((k) => /^inkling\.(model|completion|cache|server)\./.test(k)).length);
  assert.ok(SERVER_SETTINGS.includes("completion.decoder") && !SERVER_SETTINGS.includes("trace.server"));
});

test("the client attaches to files and untitled documents of the configured languages", () => {
  assert.equal(attaches(["python"], "python", "file"), true);
  assert.equal(attaches(["python"], "python", "untitled"), true);
  assert.equal(attaches(["python"], "python", "git"), false, "a diff view's other side");
  assert.equal(attaches(["python"], "go", "file"), false);
  assert.equal(attaches(["python", "go"], "go", "file"), true, "widened by inkling.languages");
});

test("contributed defaults are the server's own (tests/test_configuration_doc.py checks every one)", () => {
  const props = contributed();
  const flat: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    flat[key] = props[`inkling.${key}`].default;
  }
  const tree = toOptionsTree(flat);
  assert.deepEqual(tree.completion.drafts, 3);
  assert.deepEqual(tree.completion.automaticDrafts, 1);
  assert.deepEqual(tree.model, { path: "", device: "auto", dtype: "auto", weights: "auto", forward: "auto",
    threads: 0 });
  assert.equal(tree.cache.mode, "pie");
  assert.equal(tree.cache.staleThreshold, 0.95);
  assert.equal(tree.completion.decoder, "beam");
  assert.equal(tree.completion.draft, "auto");
  assert.equal(tree.completion.monitor, "on");
  assert.deepEqual(props["inkling.languages"].default, ["python"], "the bundled model knows Python");
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
    { command: "/venv/bin/python", args: ["-m", "inkling.cli.main", "serve"] });
  assert.deepEqual(serverCommand(["x"], "${workspaceFolder}/.venv/bin/python", { workspaceFolder: "/ws" }),
    { command: "/ws/.venv/bin/python", args: ["-m", "inkling.cli.main", "serve"] });
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
