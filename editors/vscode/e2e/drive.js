// Drives VS Code (code-server, already running with the inkling .vsix installed) in headless
// Chromium with playwright-core, as a user would: opens a Python file, shows the settings page
// filtered to the extension and changes one setting there, types, reads the ghost text from the
// DOM, cycles drafts with Alt+], accepts with Tab, reads the status bar, runs "inkling: Show
// server stats" from the command palette. tests/editors/test_vscode_e2e.py starts code-server,
// runs this, checks what it reports and assembles the frames into the animated capture.
//
//   node drive.js URL FILE OUT_DIR SETTINGS_JSON TYPED
//
// URL: the workbench with the folder (http://127.0.0.1:PORT/?folder=...); FILE: the file to
// open (its name, for Quick Open), whose last line ends without a line end; OUT_DIR:
// screenshots, report.json and frames.json go there; SETTINGS_JSON: the user settings file,
// which gets `inkling.completion.drafts: 5` from the Settings editor; TYPED: what is typed on a
// new line after the file's last one.
// Chromium: INKLING_E2E_CHROMIUM (default /usr/bin/chromium). Never downloads a browser.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { chromium } = require("playwright-core");

const [url, file, outDir, settingsFile, typed] = process.argv.slice(2);
const report = { steps: [] };
const frames = [];         // the animated capture: {file, ms, caption}, in order
const STATUS = "[id$='inkling.status']";
const DRAFTS = 5;          // the value the user sets in the Settings editor

function note(step, data = {}) {
  const entry = { step, at: Date.now() - report.start, ...data };
  report.steps.push(entry);
  console.log(JSON.stringify(entry));
  fs.writeFileSync(path.join(outDir, "report.json"), JSON.stringify(report, null, 2));
}

async function poll(fn, timeoutMs, stepMs = 200) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value || Date.now() > deadline) {
      return value;
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** What the page shows, read the way the test needs it. */
function reader(page) {
  // the ghost text as text: the cursor line's decorations (one a token), then the lines below
  const ghost = async () => page.evaluate(() => {
    const inline = [...document.querySelectorAll(".monaco-editor .ghost-text-decoration")];
    const below = [...document.querySelectorAll(".monaco-editor .ghost-text .view-line")];
    return [inline.map((e) => e.textContent).join(""), ...below.map((e) => e.textContent)]
      .join("\n").replace(/\u00a0/g, " ").replace(/\n+$/, "");
  });
  const status = async () => page.$eval(STATUS, (e) => ({ text: e.textContent.trim(), label: e.getAttribute("aria-label") }))
    .catch(() => undefined);
  const editorText = async () => page.$eval(".monaco-editor .view-lines", (e) => {
    // the rendered lines without the ghost text (its decorations are their own spans)
    const rows = [...e.querySelectorAll(".view-line")].map((row) => ({
      top: parseFloat(row.style.top || "0"),
      text: [...row.querySelectorAll("span > span")].filter((s) => !/ghost-text/.test(s.className))
        .map((s) => s.textContent).join("").replace(/\u00a0/g, " "),
    }));
    return rows.sort((a, b) => a.top - b.top).map((r) => r.text).join("\n");
  });
  // the ghost text once the server is ready and it has not changed for a second (null: none)
  const settledGhost = async (timeoutMs) => {
    let last, since = Date.now();
    return poll(async () => {
      const g = await ghost(), s = await status();
      if (g !== last) {
        last = g;
        since = Date.now();
      }
      return g && s && /ready/.test(s.label || "") && Date.now() - since >= 1000 ? g : null;
    }, timeoutMs);
  };
  return { ghost, status, editorText, settledGhost };
}

/** The command palette and notifications. */
function commands(page) {
  const run = async (title) => {
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(title);
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 10000 });
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
  };
  const toast = async (pattern) => poll(async () => {
    const texts = await page.$$eval(".notifications-toasts .notification-list-item-message", (els) => els.map((e) => e.textContent));
    return texts.find((t) => pattern.test(t));
  }, 20000);
  const clearToasts = async () => {
    await run("Notifications: Clear All Notifications");
    await page.waitForTimeout(500);
  };
  return { run, toast, clearToasts };
}

// Quick Open, retried: the file index may not be ready at once
async function openFile(page) {
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press("Control+P");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(file);
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 10000 });
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    try {
      await page.waitForSelector(".monaco-editor .view-lines", { timeout: 5000 });
      return;
    } catch (error) {
      if (attempt >= 4) {
        throw error;
      }
      await page.keyboard.press("Escape");
    }
  }
}

// Drags the sash between the Settings editor's table of contents and its settings to the right,
// so that the groups' titles show whole (a screenshot's nicety: nothing when there is none).
async function widenContents(page) {
  const sash = page.locator(".settings-editor .settings-body .monaco-sash.vertical").first();
  const box = await sash.boundingBox().catch(() => null);
  if (box) {
    await page.mouse.move(box.x + box.width / 2, box.y + 100);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + 200, box.y + 100, { steps: 8 });
    await page.mouse.up();
    await page.mouse.move(box.x - 100, box.y + 500);   // off the sash: no highlight
  }
}

/** The Settings editor's table of contents, row by row. */
async function tocRows(page) {
  return page.$$eval(".settings-editor .settings-toc-container .monaco-list-row",
    (rows) => rows.map((r) => r.textContent.trim()));
}

// The search box filtered to the extension, its suggestions closed. On a busy machine the
// filter can apply late, and an Escape that finds no suggestion open clears the query: the
// table of contents says which, and the query is typed again until it holds.
async function filterToExtension(page, search) {
  const filtered = async () => {
    const rows = await tocRows(page);
    return rows.some((r) => r.startsWith("inkling")) && !rows.some((r) => r.startsWith("Commonly Used"));
  };
  for (let attempt = 0; attempt < 4; attempt++) {
    await page.focus(search);
    await page.keyboard.press("Control+A");
    await page.keyboard.type("@ext:inkling.inkling");
    if (!(await poll(filtered, 20000))) continue;
    if (attempt === 0) {
      await page.keyboard.press("Escape");       // the search box's suggestions
    }
    await page.waitForTimeout(500);
    if (await filtered()) return;
  }
  throw new Error("the Settings editor did not filter to the extension: " + (await tocRows(page)).join(", "));
}

// The Settings editor: the page filtered to the extension (screenshot), then the user sets the
// number of drafts to cycle through in its box.
async function settingsPage(page, cmd, shot) {
  await cmd.run("Preferences: Open Settings (UI)");
  const search = ".settings-editor .suggest-input-container textarea, .settings-editor .search-container textarea";
  await page.waitForSelector(search, { timeout: 20000 });
  await filterToExtension(page, search);
  await page.setViewportSize({ width: 1440, height: 900 });
  await widenContents(page);
  await page.waitForTimeout(1500);
  await shot("vscode-settings.png");
  await page.setViewportSize({ width: 1280, height: 720 });
  const groups = await tocRows(page);
  const box = page.locator(".settings-editor .setting-item-contents",
    { has: page.locator(".setting-item-label", { hasText: /^Drafts$/ }) }).locator("input");
  // the search box focused again first (the sash drag above may have taken the focus), and
  // the query typed again where a busy machine dropped it
  for (let attempt = 0; ; attempt++) {
    await page.focus(search);
    await page.keyboard.press("Control+A");
    await page.keyboard.type("inkling.completion.drafts");
    try {
      await box.waitFor({ timeout: 10000 });
      break;
    } catch (e) {
      if (attempt === 2) throw e;
    }
  }
  await page.waitForTimeout(500);
  await box.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(String(DRAFTS));
  const applied = await poll(async () => JSON.parse(fs.readFileSync(settingsFile, "utf8"))["inkling.completion.drafts"], 10000);
  await shot("settings.png");
  await page.keyboard.press("Control+W");        // close the Settings editor
  return { groups, drafts: applied };
}

// Types TYPED on a new line at the end of the file, then cycles the drafts with Alt+] back to
// the first and accepts it with Tab; a frame of the editor after each step.
async function typeCycleAccept(page, read, frame, shot) {
  await page.click(".monaco-editor .view-lines");
  await page.keyboard.press("Control+End");
  await frame(900);
  await page.keyboard.press("Enter");              // VS Code keeps the line's indentation
  for (const ch of typed) {
    await page.keyboard.type(ch);
    await page.waitForTimeout(120);
    await frame(250);
  }
  const first = await read.settledGhost(60000);
  note("ghost text", { ghost: first, status: await read.status(), text: await read.editorText() });
  await frame(2000, "ghost text as you type");
  await shot("screenshot.png");                  // the extension's README (editors/vscode/screenshot.png)
  if (!first) {
    throw new Error("no ghost text appeared");
  }
  // Alt+] shows the next draft (an invoked request for several), round to the first again
  const cycled = [first];
  for (let press = 0; press < DRAFTS + 1; press++) {
    await page.keyboard.press("Alt+BracketRight");
    const shown = cycled[cycled.length - 1];
    const next = await poll(async () => {
      const g = await read.ghost();
      return g && g !== shown ? g : undefined;
    }, 30000);
    if (!next) {
      break;
    }
    await page.waitForTimeout(200);
    await frame(1600, next === first ? "Alt+]  round to the first draft" : "Alt+]  next draft");
    if (next === first) {
      break;
    }
    cycled.push(next);
  }
  const back = await read.ghost();
  note("drafts", { cycled, back });
  await shot("next-draft.png");
  const before = await read.editorText();
  await page.keyboard.press("Tab");
  const after = await poll(async () => {
    const t = await read.editorText();
    return t !== before ? t : undefined;
  }, 10000);
  await page.waitForTimeout(300);
  note("accepted", { text: after ?? await read.editorText(), ghost: await read.ghost() });
  await frame(2800, "Tab  accept");
  await shot("accepted.png");
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  report.start = Date.now();
  const browser = await chromium.launch({
    executablePath: process.env.INKLING_E2E_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  const shot = async (name) => page.screenshot({ path: path.join(outDir, name) });
  const frame = async (ms, caption = "") => {    // the editor's top left, where the file is
    const box = await page.locator(".part.editor").boundingBox();
    const name = `frame-${String(frames.length).padStart(2, "0")}.png`;
    await page.screenshot({ path: path.join(outDir, name),
      clip: { x: box.x, y: box.y, width: Math.min(box.width, 760), height: Math.min(box.height, 300) } });
    frames.push({ file: name, ms, caption });
    fs.writeFileSync(path.join(outDir, "frames.json"), JSON.stringify({ frames }, null, 2));
  };
  const read = reader(page);
  const cmd = commands(page);

  try {
    await page.goto(url);
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    note("workbench");
    await cmd.run("View: Close Primary Side Bar");
    await openFile(page);
    note("opened", { text: await read.editorText() });
    const ready = await poll(async () => {
      const s = await read.status();
      return s && /ready/.test(s.label || "") ? s : undefined;
    }, 240000);
    note("ready", { status: ready ?? await read.status() });
    if (!ready) {
      throw new Error("the status bar never said ready");
    }

    // the stats with the extension's default settings (the options go to the log)
    await cmd.run("inkling: Show server stats");
    note("stats with default settings", { toast: await cmd.toast(/answered/) });
    await cmd.clearToasts();

    note("settings changed", await settingsPage(page, cmd, shot));
    await cmd.clearToasts();

    await typeCycleAccept(page, read, frame, shot);

    // the status bar shows ready and the last latency
    note("status", { status: await read.status() });

    // the extension's stats command: the server counted the acceptance
    await cmd.run("inkling: Show server stats");
    note("stats", { toast: await cmd.toast(/[1-9]\d* accepted/) ?? await cmd.toast(/answered/) });
    await shot("stats.png");

    // a restart on purpose: back to ready (the test checks the log has no error in it)
    await cmd.run("inkling: Restart the server");
    const down = await poll(async () => {
      const s = await read.status();
      return s && !/ready/.test(s.label || "") ? s : undefined;
    }, 15000, 50);
    note("restarting", { status: down });
    const again = await poll(async () => {
      const s = await read.status();
      return s && /ready/.test(s.label || "") ? s : undefined;
    }, 240000);
    note("restarted", { status: again ?? await read.status() });
    note("done");
  } catch (error) {
    note("error", { message: String(error && error.stack || error) });
    await shot("error.png").catch(() => undefined);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

main();
