/**
 * VS Code settings -> the server's command line and its options tree
 * (`initializationOptions` and `workspace/didChangeConfiguration`).
 *
 * Pure: no `vscode` import, so the unit tests run under plain Node.
 */
import * as fs from "fs";
import * as path from "path";

/** The server's options tree: {model: {...}, completion: {...}, cache: {...}, server: {...}}. */
export type OptionsTree = Record<string, Record<string, string | number | boolean>>;

/** The sections of the server's options tree (`inkling.<section>.<option>` settings). */
const SECTIONS = new Set(["model", "completion", "cache", "server"]);

/** A package.json, the parts read here: `contributes.configuration`, one section or several. */
export interface Manifest {
  contributes: { configuration: { properties: Record<string, unknown> } | { properties: Record<string, unknown> }[] };
}

/**
 * The contributed settings (below `inkling.`) that belong to the server's options tree:
 * package.json's, generated from the tree by scripts/configuration_doc.py, so the list is
 * kept in one place.
 */
export function serverSettings(manifest: Manifest): string[] {
  const configuration = manifest.contributes.configuration;
  const sections = Array.isArray(configuration) ? configuration : [configuration];
  return sections.flatMap((section) => Object.keys(section.properties))
    .map((key) => key.replace(/^inkling\./, ""))
    .filter((key) => SECTIONS.has(key.split(".")[0]) && key.split(".").length === 2);
}

/** The server settings this extension contributes (its package.json, beside out/). */
export const SERVER_SETTINGS: readonly string[] = serverSettings(
  JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as Manifest);

/** Whether the client attaches to a document: a file or an untitled one of `languages`. */
export function attaches(languages: readonly string[], languageId: string, scheme: string): boolean {
  return (scheme === "file" || scheme === "untitled") && languages.includes(languageId);
}

/** What `WorkspaceConfiguration.inspect()` says of one setting (the parts read here). */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The value the user set for a setting (folder over workspace over user settings), or
 * undefined when only the contributed default applies. Only such values are sent to the
 * server: a default is the server's own, so the server's defaults stay in force.
 */
export function userValue(inspected: Inspected | undefined): unknown {
  if (!inspected) {
    return undefined;
  }
  for (const value of [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue]) {
    if (value !== undefined) {
      return value;
    }
  }
  return undefined;
}

/** The settings whose change needs a new server process rather than a configuration message. */
export const RESTART_SETTINGS: readonly string[] = ["serverCommand", "pythonPath", "languages"];

/** snake_case or camelCase -> camelCase ("max_new_tokens" -> "maxNewTokens"). */
export function camelCase(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Flat settings ({"completion.drafts": 3, ...}, keys below `inkling.`) -> the options tree.
 * Unknown sections, nulls and undefined values are left out; keys become camelCase (the
 * server accepts both). Values are passed as they are: the server validates them and names
 * a bad one in a message, keeping its previous value.
 */
export function toOptionsTree(flat: Record<string, unknown>): OptionsTree {
  const tree: OptionsTree = {};
  for (const [key, value] of Object.entries(flat)) {
    const dot = key.indexOf(".");
    if (dot < 0 || value === undefined || value === null) {
      continue;
    }
    const section = key.slice(0, dot);
    const name = camelCase(key.slice(dot + 1));
    if (!SECTIONS.has(section) || name === "" || name.includes(".")) {
      continue;
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      continue;
    }
    (tree[section] ??= {})[name] = value;
  }
  return tree;
}

/** `${workspaceFolder}`, `${userHome}` and a leading `~/` in a path setting. */
export function expandPath(value: string, vars: { workspaceFolder?: string; userHome?: string }): string {
  let out = value.replace(/\$\{(workspaceFolder|userHome)\}/g, (whole, name: "workspaceFolder" | "userHome") => vars[name] ?? whole);
  if (vars.userHome && (out === "~" || out.startsWith("~/"))) {
    out = vars.userHome + out.slice(1);
  }
  return out;
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/**
 * The command that starts `inkling serve` over stdio: `pythonPath -m inkling.cli.main serve`
 * when a Python is configured, else `serverCommand` (default `inkling serve`); paths may use
 * `${workspaceFolder}`, `${userHome}` and `~/`.
 */
export function serverCommand(
  serverCommandSetting: unknown,
  pythonPath: unknown,
  vars: { workspaceFolder?: string; userHome?: string } = {},
): ServerCommand {
  if (typeof pythonPath === "string" && pythonPath.trim() !== "") {
    return { command: expandPath(pythonPath.trim(), vars), args: ["-m", "inkling.cli.main", "serve"] };
  }
  let parts: string[] = [];
  if (Array.isArray(serverCommandSetting)) {
    parts = serverCommandSetting.filter((p): p is string => typeof p === "string" && p !== "");
  } else if (typeof serverCommandSetting === "string") {
    parts = serverCommandSetting.trim().split(/\s+/).filter((p) => p !== "");
  }
  if (parts.length === 0) {
    parts = ["inkling", "serve"];
  }
  parts = parts.map((p) => expandPath(p, vars));
  return { command: parts[0], args: parts.slice(1) };
}

/** Whether a configuration change touching `affected` (setting names below `inkling.`) needs a restart. */
export function needsRestart(affected: (name: string) => boolean): boolean {
  return RESTART_SETTINGS.some((name) => affected(name));
}
