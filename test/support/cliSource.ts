import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cleanEnv } from "./cli.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run `identity <args>` from the TypeScript sources (no build needed) to its
 * end, in an environment without our settings plus `env`; a process still
 * running after `timeoutMs` is stopped with SIGTERM (then `code` is 0 or 143).
 */
export function runIdentity(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<CliResult> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
