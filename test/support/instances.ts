import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A real `identity serve` process. */
export interface Instance {
  url: string;
  process: ChildProcess;
  /** What it wrote to stderr so far (JSON log lines), for failure messages. */
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Start `identity serve --port 0 <args>` from the TypeScript sources (no
 * build needed) and resolve once it prints where it listens.
 */
export function startInstance(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Instance> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "serve", "--port", "0", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const instance = (url: string): Instance => ({
    url,
    process: child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(instance(match[1]!));
    });
    child.once("exit", (code) => reject(new Error(`identity serve exited with ${code} before listening:\n${stderr}`)));
  });
}
