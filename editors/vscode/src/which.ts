/**
 * Whether a server command can be started, checked before the language client tries: a
 * missing command is then one clear message instead of the client's own error per attempt.
 */
import * as fs from "fs";
import * as path from "path";

function isExecutable(file: string, platform: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) {
      return false;
    }
    if (platform === "win32") {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The full path of `command` (a path, or a name looked up in PATH), or undefined. */
export function findExecutable(
  command: string,
  env: Record<string, string | undefined> = process.env,
  platform: string = process.platform,
  cwd: string = process.cwd(),
): string | undefined {
  if (command === "") {
    return undefined;
  }
  const exts = platform === "win32" ? ["", ...(env.PATHEXT ?? ".EXE;.CMD;.BAT;.COM").split(";")] : [""];
  const hasDir = command.includes("/") || (platform === "win32" && command.includes("\\"));
  if (hasDir) {
    const full = path.resolve(cwd, command);
    return exts.map((e) => full + e).find((f) => isExecutable(f, platform));
  }
  const sep = platform === "win32" ? ";" : ":";
  for (const dir of (env.PATH ?? env.Path ?? "").split(sep)) {
    if (!dir) {
      continue;
    }
    for (const e of exts) {
      const candidate = path.join(dir, command + e);
      if (isExecutable(candidate, platform)) {
        return candidate;
      }
    }
  }
  return undefined;
}
