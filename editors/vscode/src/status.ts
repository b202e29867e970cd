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
}

function short(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max - 1) + "\u2026";
}

export function formatStatus(status: ServerStatus | undefined): StatusView {
  if (!status) {
    return { text: "$(loading~spin) inkling", tooltip: "inkling: starting the server", severity: "normal" };
  }
  const message = status.message ?? "";
  const detail = message ? `\n${message}` : "";
  const click = "\n\nClick for the server's stats.";
  switch (status.state) {
    case "starting":
      return { text: "$(loading~spin) inkling", tooltip: `inkling: starting${detail}`, severity: "normal" };
    case "loading":
    case "indexing": {
      const pct = typeof status.progress === "number" ? ` ${Math.round(status.progress)}%` : "";
      return { text: `$(loading~spin) inkling${pct}`, tooltip: `inkling: ${status.state}${pct}${detail}`, severity: "normal" };
    }
    case "ready": {
      const ms = typeof status.latencyMs === "number" ? ` ${Math.round(status.latencyMs)} ms` : "";
      return { text: `$(check) inkling${ms}`, tooltip: `inkling: ready${ms ? ` (last completion${ms})` : ""}${detail}${click}`, severity: "normal" };
    }
    case "busy":
      return { text: "$(sync~spin) inkling", tooltip: `inkling: completing${detail}${click}`, severity: "normal" };
    case "error":
      return { text: "$(error) inkling", tooltip: `inkling: ${short(message || "error", 300)}${click}`, severity: "error" };
    case "off":
      return { text: "$(circle-slash) inkling", tooltip: "inkling: off (click or run inkling: Toggle completions)", severity: "warning" };
    default:
      return { text: `inkling: ${status.state}`, tooltip: `inkling: ${status.state}${detail}`, severity: "normal" };
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
  ];
}

/** `inkling/stats` in one line (for a notification). */
export function summarizeStats(stats: ServerStats): string {
  const lat = stats.latency_ms ?? {};
  return `inkling: ${num(stats.answered)} answered, ${num(stats.accepted)} accepted, ` +
    `${num(stats.cancelled)} cancelled, ${num(stats.errors)} errors; latency p50 ${num(lat.p50, " ms")}, p95 ${num(lat.p95, " ms")}`;
}
