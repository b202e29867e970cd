/**
 * Where completions are on: `inkling.enable` (true / false, or copilot's per-language object
 * `{"*": true, "markdown": false}`), documents turned off for the session, and the trigger
 * mode (`inkling.triggerMode`: "automatic" as you type, or "manual": only when asked with
 * Alt+\ or by cycling).
 *
 * Pure: no `vscode` import, so the unit tests run under plain Node.
 */

export type EnableSetting = boolean | Record<string, unknown> | undefined | null;
export type TriggerMode = "automatic" | "manual";

function flag(value: unknown): boolean | undefined {
  return typeof value === "boolean" ? value : undefined;
}

/** Whether completions are on at all (`true`, or the object's "*", default on). */
export function globallyEnabled(setting: EnableSetting): boolean {
  if (typeof setting === "boolean") {
    return setting;
  }
  if (setting && typeof setting === "object") {
    return flag(setting["*"]) ?? true;
  }
  return true;
}

/** Whether completions are on for a language: its own entry, else "*". */
export function enabledForLanguage(setting: EnableSetting, languageId: string): boolean {
  if (!globallyEnabled(setting)) {
    return false;
  }
  if (setting && typeof setting === "object") {
    return flag(setting[languageId]) ?? true;
  }
  return true;
}

/** The setting as an object, with "*" (when `languageId` is undefined) or one language set. */
export function withEnabled(setting: EnableSetting, on: boolean, languageId?: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  if (setting && typeof setting === "object") {
    for (const [key, value] of Object.entries(setting)) {
      if (typeof value === "boolean") {
        out[key] = value;
      }
    }
  } else if (typeof setting === "boolean") {
    out["*"] = setting;
  }
  out[languageId ?? "*"] = on;
  return out;
}

export function triggerMode(value: unknown): TriggerMode {
  return value === "manual" ? "manual" : "automatic";
}

/**
 * What is left of a draft offered at some point once `typed` (the text between that point
 * and the cursor) has been typed: undefined when the typing left the draft, or nothing of it
 * is left. A newline the draft contains may be followed by other indentation than the
 * draft's (the editor's auto-indent): the rest of that line then follows the cursor.
 */
export function remaining(draft: string, typed: string): string | undefined {
  if (draft.startsWith(typed)) {
    return draft.length > typed.length ? draft.slice(typed.length) : undefined;
  }
  const nl = typed.lastIndexOf("\n");
  if (nl < 0) {
    return undefined;
  }
  const indent = typed.slice(nl + 1);
  const head = typed.slice(0, nl + 1);
  if (/\S/.test(indent) || !draft.startsWith(head)) {
    return undefined;
  }
  const rest = draft.slice(head.length);
  const own = /^[ \t]*/.exec(rest)![0];
  const left = own.startsWith(indent) ? rest.slice(indent.length) : rest.slice(own.length);
  return left.length > 0 ? left : undefined;
}
