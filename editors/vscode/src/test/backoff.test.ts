import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { backoffDelay, RestartPolicy } from "../backoff";
import { findExecutable } from "../which";

const OPTS = { initialMs: 1000, factor: 2, maxMs: 8000, healthyAfterMs: 60000 };

test("backoff doubles up to the cap", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, OPTS)), [1000, 2000, 4000, 8000, 8000, 8000]);
  assert.equal(backoffDelay(0, OPTS), 1000);
});

test("a crash loop is reported once, with growing delays", () => {
  let now = 0;
  const policy = new RestartPolicy(OPTS, () => now);
  const results = [];
  for (let i = 0; i < 5; i++) {
    policy.started();
    now += 500;                       // dies half a second after each start
    results.push(policy.failed());
  }
  assert.deepEqual(results.map((r) => r.report), [true, false, false, false, false]);
  assert.deepEqual(results.map((r) => r.delayMs), [1000, 2000, 4000, 8000, 8000]);
});

test("a server that ran a good while starts a new outage; reset forgets", () => {
  let now = 0;
  const policy = new RestartPolicy(OPTS, () => now);
  assert.equal(policy.failed().report, true);
  assert.equal(policy.failed().report, false);
  policy.started();
  now += 120000;
  const again = policy.failed();
  assert.equal(again.report, true);
  assert.equal(again.delayMs, 1000);
  policy.reset();
  assert.equal(policy.consecutiveFailures, 0);
  assert.equal(policy.failed().report, true);
});

test("a missing server command is found missing before the client tries it", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inkling-which-"));
  const exe = path.join(dir, "inkling");
  fs.writeFileSync(exe, "#!/bin/sh\n");
  fs.chmodSync(exe, 0o755);
  const plain = path.join(dir, "notes.txt");
  fs.writeFileSync(plain, "");
  assert.equal(findExecutable("inkling", { PATH: `/nonexistent:${dir}` }, "linux"), exe);
  assert.equal(findExecutable(exe, {}, "linux"), exe);
  assert.equal(findExecutable("./inkling", {}, "linux", dir), exe);
  assert.equal(findExecutable("no-such-inkling", { PATH: dir }, "linux"), undefined);
  assert.equal(findExecutable(plain, {}, "linux"), undefined);
  assert.equal(findExecutable(dir, {}, "linux"), undefined);
  assert.equal(findExecutable("", { PATH: dir }, "linux"), undefined);
});
