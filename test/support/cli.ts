import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

export const MAIN = "dist/src/main.js";

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * The CLI tests run the built JavaScript, as `npm start` and the `identity`
 * bin do. `npm ci` builds it; rebuild only when a source is newer, so a
 * local run never tests stale output.
 */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  if (built >= Math.max(newestMtime("src"), newestMtime("gen"))) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
}

/** An environment without any of our settings, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ["PORT", "HOST", "DATABASE_URL"]) delete env[key];
  for (const key of Object.keys(env)) if (key.startsWith("IDENTITY_")) delete env[key];
  return { ...env, ...extra };
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the stdout match once it appears; rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** Run `node <script> ...args` (the built CLI or the bin) and watch its output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, script = MAIN): CliProcess {
  return watch(spawn(process.execPath, [script, ...args], { env, stdio: ["ignore", "pipe", "pipe"] }));
}

/** Whether util-linux `script` is here to give a command a pseudo-terminal. */
export function hasScript(): boolean {
  return spawnSync("script", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Run `node <script> ...args` on a pseudo-terminal (util-linux `script`), so
 * its standard output and error are a terminal, as when a person runs it.
 * Both arrive in stdout(), in the order written, with the terminal's \r\n
 * as \n and without colours. The child is `script`: signal the node process
 * by the pid it prints.
 */
export function runCliInTerminal(args: string[], env: NodeJS.ProcessEnv, script = MAIN): CliProcess {
  const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
  const command = ["exec", process.execPath, script, ...args].map(quote).join(" ");
  // stdin stays open: `script` passes what it reads to the terminal, and its end would end the session.
  const child = spawn("script", ["-qfec", command, "/dev/null"], { env: { ...env, TERM: env.TERM ?? "xterm" }, stdio: ["pipe", "pipe", "pipe"] });
  return watch(child, (text) => text.replace(/\r/g, "").replace(/\x1b\[[0-9;]*m/g, ""));
}

function watch(child: ChildProcess, clean: (text: string) => string = (text) => text): CliProcess {
  let raw = "";
  let err = "";
  const out = () => clean(raw);
  child.stdout!.on("data", (d: Buffer) => (raw += d));
  child.stderr!.on("data", (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    child,
    stdout: out,
    stderr: () => err,
    exited,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = out().match(pattern);
          if (match) {
            child.stdout!.off("data", check);
            resolve(match);
          }
        };
        child.stdout!.on("data", check);
        check();
        exited.then((code) => reject(new Error(`exited with ${code} before ${pattern}:\n${out()}\n${err}`)));
      }),
  };
}
