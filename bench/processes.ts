import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** A child process the suite started, and the line it printed when ready. */
export interface Service {
  name: string;
  pid: number;
  /** The ready pattern's match against its output. */
  ready: RegExpExecArray;
  logFile: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

// Whatever happens to the suite, it leaves no server behind.
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => process.exit(130));
}

export interface SpawnOptions {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Where its stdout and stderr go: a file, so that a chatty server costs the load generator nothing. */
  logFile: string;
  ready: RegExp;
  timeoutMs?: number;
}

/** Start `node <args>` and wait until its output matches `ready`. */
export async function startService(options: SpawnOptions): Promise<Service> {
  const out = openSync(options.logFile, "w");
  const child = spawn(process.execPath, options.args, {
    stdio: ["ignore", out, out],
    env: { ...process.env, ...options.env },
  });
  closeSync(out);
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  exited.then(() => running.delete(child));

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const match = options.ready.exec(readFileSync(options.logFile, "utf8"));
    if (match) {
      return {
        name: options.name,
        pid: child.pid!,
        ready: match,
        logFile: options.logFile,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          await Promise.race([exited, sleep(10_000).then(() => child.kill("SIGKILL"))]);
        },
      };
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${options.name} did not start:\n${tail(options.logFile)}`);
    }
    await sleep(50);
  }
}

/** The last lines of a log, for error messages. */
export function tail(file: string, lines = 20): string {
  return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
}

/** Resident set size of a process in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib[1]) / 1024;
}

/** CPU time a process has used, user and system, in ms (Linux /proc; the kernel counts in ticks of 10 ms). */
export function cpuMs(pid: number): number {
  // The fields after the command's closing parenthesis; utime and stime are the 14th and 15th of the line.
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Run `node <args>` to completion, with `input` on its stdin, and return its stdout. */
export function runNode(args: string[], input = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
    // A child that dies before reading it all breaks the pipe; its exit code says why.
    child.stdin.on("error", () => {}).end(input);
    running.add(child);
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.once("exit", (code) => {
      running.delete(child);
      if (code === 0) resolve(out);
      else reject(new Error(`node ${args.join(" ")} exited with ${code}`));
    });
  });
}
