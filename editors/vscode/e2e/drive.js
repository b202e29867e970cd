// Drives VS Code (code-server, already running with the inkling .vsix installed) in headless
// Chromium with playwright-core, as a user would: opens a Python file, types, reads the ghost
// text from the DOM, cycles drafts with Alt+], accepts with Tab, reads the status bar, runs
// "inkling: Show server stats" from the command palette. tests/editors/test_vscode_e2e.py starts
// code-server, runs this and checks what it reports.
//
//   node drive.js URL FILE OUT_DIR SETTINGS_JSON
//
// URL: the workbench with the folder (http://127.0.0.1:PORT/?folder=...); FILE: the file to
// open (its name, for Quick Open); OUT_DIR: screenshots and report.json go there;
// SETTINGS_JSON: the user settings file, which gets `inkling.completion.decoder: branches`
// half way (the user picks the decoder that gives drafts to cycle through).
// Chromium: INKLING_E2E_CHROMIUM (default /usr/bin/chromium). Never downloads a browser.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { chromium } = require("playwright-core");

const [url, file, outDir, settingsFile] = process.argv.slice(2);
const report = { steps: [] };
const STATUS = "[id$='inkling.status']";
const GHOST = ".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text";

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
  const ghost = async () => page.$$eval(GHOST, (els) => els.map((e) => e.textContent).join("\n"));
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
  const runCommand = async (title) => {
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

  try {
    await page.goto(url);
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    note("workbench");
    // open the file with Quick Open (retried: the file index may not be ready at once)
    for (let attempt = 0; ; attempt++) {
      await page.keyboard.press("Control+P");
      await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
      await page.keyboard.type(file);
      await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 10000 });
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
      try {
        await page.waitForSelector(".monaco-editor .view-lines", { timeout: 5000 });
        break;
      } catch (error) {
        if (attempt >= 4) {
          throw error;
        }
        await page.keyboard.press("Escape");
      }
    }
    note("opened", { text: await editorText() });
    const ready = await poll(async () => {
      const s = await status();
      return s && /ready/.test(s.label || "") ? s : undefined;
    }, 120000);
    note("ready", { status: ready ?? await status() });
    if (!ready) {
      throw new Error("the status bar never said ready");
    }

    // the stats with the extension's default settings (the options go to the log)
    await runCommand("inkling: Show server stats");
    note("stats with default settings", { toast: await toast(/answered/) });

    // the user picks the decoder that gives drafts to cycle through, in the Settings editor
    await runCommand("Preferences: Open User Settings");
    await page.waitForSelector(".settings-editor .suggest-input-container textarea, .settings-editor .search-container textarea",
      { timeout: 20000 });
    await page.keyboard.type("inkling.completion.decoder");
    const select = ".settings-editor .setting-item-contents select";
    await page.waitForSelector(select, { timeout: 20000 });
    await page.waitForTimeout(500);
    await page.selectOption(select, "branches");
    const applied = await poll(async () => JSON.parse(fs.readFileSync(settingsFile, "utf8"))["inkling.completion.decoder"], 10000);
    note("settings changed", { decoder: applied });
    await shot("settings.png");
    await page.keyboard.press("Control+W");        // close the Settings editor
    await runCommand("Notifications: Clear All Notifications");
    await page.waitForTimeout(1000);

    // type at the end of the file; ghost text appears as you type
    await page.click(".monaco-editor .view-lines");
    await page.keyboard.press("Control+End");
    await page.keyboard.type("def exists(path):", { delay: 40 });
    await page.keyboard.press("Enter");
    await page.keyboard.type("return os.", { delay: 40 });
    const first = await poll(ghost, 30000);
    note("ghost text", { ghost: first, status: await status(), text: await editorText() });
    await page.waitForTimeout(300);
    await shot("screenshot.png");                  // the README's (editors/vscode/screenshot.png)
    if (!first) {
      throw new Error("no ghost text appeared");
    }

    // Alt+] shows the next draft (an invoked request for several)
    await page.keyboard.press("Alt+BracketRight");
    const next = await poll(async () => {
      const g = await ghost();
      return g && g !== first ? g : undefined;
    }, 30000);
    note("next draft", { ghost: next ?? await ghost(), status: await status() });
    await shot("next-draft.png");
    if (!next) {
      throw new Error("Alt+] did not change the ghost text");
    }

    // Tab inserts it
    const before = await editorText();
    await page.keyboard.press("Tab");
    const after = await poll(async () => {
      const t = await editorText();
      return t !== before ? t : undefined;
    }, 10000);
    note("accepted", { text: after ?? await editorText(), ghost: await ghost() });
    await shot("accepted.png");
    await page.waitForTimeout(500);

    // the status bar shows ready and the last latency
    note("status", { status: await status() });

    // the extension's stats command: the server counted the acceptance
    await runCommand("inkling: Show server stats");
    note("stats", { toast: await toast(/[1-9]\d* accepted/) ?? await toast(/answered/) });
    await shot("stats.png");

    // a restart on purpose: back to ready (the test checks the log has no error in it)
    await runCommand("inkling: Restart the server");
    const down = await poll(async () => {
      const s = await status();
      return s && !/ready/.test(s.label || "") ? s : undefined;
    }, 15000, 50);
    note("restarting", { status: down });
    const again = await poll(async () => {
      const s = await status();
      return s && /ready/.test(s.label || "") ? s : undefined;
    }, 120000);
    note("restarted", { status: again ?? await status() });
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
