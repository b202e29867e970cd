import assert from "node:assert/strict";
import { test } from "node:test";

import { enabledForLanguage, globallyEnabled, remaining, triggerMode, withEnabled } from "../enablement";

test("inkling.enable: a boolean, or copilot's per-language object with \"*\"", () => {
  assert.equal(globallyEnabled(undefined), true);
  assert.equal(globallyEnabled(true), true);
  assert.equal(globallyEnabled(false), false);
  assert.equal(globallyEnabled({ markdown: false }), true);
  assert.equal(globallyEnabled({ "*": false, python: true }), false);
  assert.equal(enabledForLanguage({ "*": true, markdown: false }, "markdown"), false);
  assert.equal(enabledForLanguage({ "*": true, markdown: false }, "python"), true);
  assert.equal(enabledForLanguage(false, "python"), false);
  assert.equal(enabledForLanguage({ python: "yes" }, "python"), true, "a non-boolean entry is ignored");
});

test("toggling writes the object form, keeping the other entries", () => {
  assert.deepEqual(withEnabled(true, false, "python"), { "*": true, python: false });
  assert.deepEqual(withEnabled({ "*": true, markdown: false }, false), { "*": false, markdown: false });
  assert.deepEqual(withEnabled(undefined, true, "go"), { go: true });
});

test("trigger mode: automatic unless set to manual", () => {
  assert.equal(triggerMode(undefined), "automatic");
  assert.equal(triggerMode("manual"), "manual");
  assert.equal(triggerMode("Manual"), "automatic");
});

test("typing along a draft keeps its rest, a newline and auto-indent included", () => {
  const draft = "total = a + b\n    return total";
  assert.equal(remaining(draft, ""), draft);
  assert.equal(remaining(draft, "tot"), "al = a + b\n    return total");
  assert.equal(remaining(draft, "total = a + b\n    "), "return total");          // same indent
  assert.equal(remaining(draft, "total = a + b\n  "), "  return total");         // less: the rest of it
  assert.equal(remaining(draft, "total = a + b\n        "), "return total");     // more: the line's text
  assert.equal(remaining(draft, "total = a + b\n"), "    return total");
  assert.equal(remaining(draft, "total = a - b"), undefined);                    // left the draft
  assert.equal(remaining(draft, "total = a + b\n    r"), "eturn total");
  assert.equal(remaining(draft, "total = a + b\n    x"), undefined);
  assert.equal(remaining(draft, draft), undefined);                              // all typed
  assert.equal(remaining("a\n", "a\n"), undefined);
});
