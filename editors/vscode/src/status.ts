/**
 * Status bar text from `inkling/status` notifications, and `inkling/stats` as text.
 *
 * Pure: no `vscode` import, so the unit tests run under plain Node.
 */

/** The params of an `inkling/status` notification. */
export interface ServerStatus {
  state: "starting" | "loading" | "indexing" | "ready" | "busy" | "error" | "off" | string;
  message?: string | null;
  progress?: number | null;
  latencyMs?: number | null;
}

/** What the status bar item shows. */
export interface StatusView {
  text: string;
  tooltip: string;
  /** "error" and "warning" get the theme's error / warning background. */
  severity: "normal" | "warning" | "error";
  /** What a screen reader says (the item's aria-label): the state in words. */
  label: string;
}

/** The `inkling/stats` result. */
export interface ServerStats {
  requests?: number;
  cancelled?: number;
  answered?: number;
  accepted?: number;
  errors?: number;
  latency_ms?: { p50?: number | null; p95?: number | null; count?: number | null } | null;
  state?: string;
  documents?: number;
  refreshes?: number;
  cache_mode?: string;
  /** The server's options in force (snake_case, as `inkling serve` holds them). */
  options?: Record<string, Record<string, unknown>>;
}

function short(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max - 1) + "\u2026";
}

export function formatStatus(status: ServerStatus | undefined): StatusView {
  if (!status) {
    return { text: "$(loading~spin) inkling", tooltip: "inkling: starting the server", severity: "normal", label: "inkling starting" };
  }
  const message = status.message ?? "";
  const detail = message ? `\n${message}` : "";
  const click = "\n\nClick for the server's stats.";
  switch (status.state) {
    case "starting":
      return { text: "$(loading~spin) inkling", tooltip: `inkling: starting${detail}`, severity: "normal", label: "inkling starting" };
    case "loading":
    case "indexing": {
      const pct = typeof status.progress === "number" ? ` ${Math.round(status.progress)}%` : "";
      return { text: `$(loading~spin) inkling${pct}`, tooltip: `inkling: ${status.state}${pct}${detail}`, severity: "normal",
        label: `inkling ${status.state}${pct}` };
    }
    case "ready": {
      const ms = typeof status.latencyMs === "number" ? ` ${Math.round(status.latencyMs)} ms` : "";
      return { text: `$(check) inkling${ms}`, tooltip: `inkling: ready${ms ? ` (last completion${ms})` : ""}${detail}${click}`, severity: "normal",
        label: `inkling ready${ms ? `, last completion${ms}` : ""}` };
    }
    case "busy":
      return { text: "$(sync~spin) inkling", tooltip: `inkling: completing${detail}${click}`, severity: "normal", label: "inkling completing" };
    case "error":
      return { text: "$(error) inkling", tooltip: `inkling: ${short(message || "error", 300)}${click}`, severity: "error",
        label: `inkling error: ${short(message || "error", 120)}` };
    case "off": {
      const why = message || "off";
      return { text: "$(circle-slash) inkling", tooltip: `inkling: ${why} (click or run inkling: Toggle completions)`, severity: "warning",
        label: `inkling ${why}` };
    }
    default:
      return { text: `inkling: ${status.state}`, tooltip: `inkling: ${status.state}${detail}`, severity: "normal", label: `inkling ${status.state}` };
  }
}

function num(value: number | null | undefined, unit = ""): string {
  if (typeof value !== "number") {
    return "-";
  }
  const text = Number.isInteger(value) ? String(value) : value.toFixed(1);
  return text + unit;
}

/** `inkling/stats` as lines for the output channel. */
export function formatStats(stats: ServerStats): string[] {
  const lat = stats.latency_ms ?? {};
  return [
    `state      ${stats.state ?? "-"}`,
    `requests   ${num(stats.requests)}  answered ${num(stats.answered)}  cancelled ${num(stats.cancelled)}  errors ${num(stats.errors)}`,
    `accepted   ${num(stats.accepted)}`,
    `latency    p50 ${num(lat.p50, " ms")}  p95 ${num(lat.p95, " ms")}  (${num(lat.count)} completions)`,
    `documents  ${num(stats.documents)}`,
    `cache      ${stats.cache_mode ?? "-"}, ${num(stats.refreshes)} idle refreshes`,
    ...(stats.options ? [`options    ${JSON.stringify(stats.options)}`] : []),
  ];
}

/** `inkling/stats` in one line (for a notification). */
export function summarizeStats(stats: ServerStats): string {
  const lat = stats.latency_ms ?? {};
  return `inkling: ${num(stats.answered)} answered, ${num(stats.accepted)} accepted, ` +
    `${num(stats.cancelled)} cancelled, ${num(stats.errors)} errors; latency p50 ${num(lat.p50, " ms")}, p95 ${num(lat.p95, " ms")}`;
}

/**
 * The log level of a line the server wrote to standard error: its logging level
 * ("... inkling.server WARNING ..."), else (a traceback's or a progress bar's line) the
 * level of the line before.
 */
export function stderrLevel(line: string, previous: string = "info"): "info" | "warn" | "error" {
  const m = /\s(DEBUG|INFO|WARNING|ERROR|CRITICAL)\s/.exec(` ${line} `);
  if (m) {
    return m[1] === "WARNING" ? "warn" : m[1] === "ERROR" || m[1] === "CRITICAL" ? "error" : "info";
  }
  if (/^Traceback \(most recent call last\)/.test(line)) {
    return "error";
  }
  return previous === "warn" || previous === "error" ? previous : "info";
}
