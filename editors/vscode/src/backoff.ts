/**
 * Restarts with backoff, and reporting a failure once per outage.
 *
 * Pure: no `vscode` import, so the unit tests run under plain Node.
 */

export interface BackoffOptions {
  initialMs: number;
  factor: number;
  maxMs: number;
  /** A server that stayed up this long before failing starts a new outage. */
  healthyAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, factor: 2, maxMs: 30000, healthyAfterMs: 60000 };

/** The delay before restart number `failures` (1 for the first failure). */
export function backoffDelay(failures: number, opts: BackoffOptions = DEFAULT_BACKOFF): number {
  const n = Math.max(1, Math.floor(failures));
  return Math.min(opts.maxMs, opts.initialMs * Math.pow(opts.factor, n - 1));
}

/**
 * Counts consecutive failures of the server and decides what to say: one message per outage
 * (never one per restart), the next restart's delay, and a fresh start once the server ran
 * for `healthyAfterMs`.
 */
export class RestartPolicy {
  private failures = 0;
  private reported = false;
  private upSince: number | undefined;

  constructor(private readonly opts: BackoffOptions = DEFAULT_BACKOFF, private readonly now: () => number = Date.now) {}

  /** The server started (or became ready). */
  started(): void {
    this.upSince = this.now();
  }

  /** The server failed (missing, crashed, refused to start): whether to tell the user, and when to retry. */
  failed(): { report: boolean; delayMs: number; failures: number } {
    if (this.upSince !== undefined && this.now() - this.upSince >= this.opts.healthyAfterMs) {
      this.failures = 0;
      this.reported = false;
    }
    this.upSince = undefined;
    this.failures += 1;
    const report = !this.reported;
    this.reported = true;
    return { report, delayMs: backoffDelay(this.failures, this.opts), failures: this.failures };
  }

  /** The user asked for a restart (or changed the command): forget the outage. */
  reset(): void {
    this.failures = 0;
    this.reported = false;
    this.upSince = undefined;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
