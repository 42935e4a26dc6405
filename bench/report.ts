import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";

/** How a row compares its ratio (ours / reference) with the target. */
export type Comparison = "atLeast" | "atMost";

/** One row of the results table: our figure against a reference measured in the same run. */
export interface Row {
  scenario: string;
  ours: number;
  unit: "req/s" | "ms" | "MB";
  referenceLabel: string;
  reference: number;
  comparison: Comparison;
  /** The ratio ours / reference must be at least (or at most) this. */
  target: number;
  /** Why the row fails regardless of its ratio (e.g. failed responses). */
  problem?: string;
}

/** A figure measured in the run without a target of its own. */
export interface Figure {
  what: string;
  value: number;
  unit: string;
}

export interface Report {
  date: string;
  machine: string;
  mode: string;
  workers: number;
  rows: Row[];
  references: Figure[];
  scaling: { scenario: string; one: number; many: number }[];
  notes: string[];
}

export function machineDescription(): string {
  const cores = cpus();
  const gb = (totalmem() / 1e9).toFixed(0);
  return `${cores.length} × ${cores[0]?.model.trim() ?? "unknown CPU"}, ${gb} GB RAM, Node ${process.version}, ${process.platform}; load average ${loadavg()[0]!.toFixed(1)} at start`;
}

export const ratioOf = (row: Row) => row.ours / row.reference;

const meets = (row: Row, ratio: number) => (row.comparison === "atLeast" ? ratio >= row.target : ratio <= row.target);

export function passes(row: Row): boolean {
  return !row.problem && meets(row, ratioOf(row));
}

const number = (value: number, digits = 0) => value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The ratio to two decimals, or more where two would round it onto the target's other side (0.996x, not 1.00x, misses ≥ 1.00x). */
function ratioText(row: Row): string {
  const ratio = ratioOf(row);
  let digits = 2;
  while (digits < 6 && meets(row, Number(ratio.toFixed(digits))) !== meets(row, ratio)) digits++;
  return `${number(ratio, digits)}x`;
}

function figure(value: number, unit: string): string {
  if (unit === "ms") return `${number(value, 1)} ms`;
  if (unit === "MB") return `${number(value)} MB`;
  return `${number(value)} ${unit}`;
}

function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

export function renderMarkdown(report: Report): string {
  const results = markdownTable(
    ["scenario", "ours", "reference", "ratio", "target", "result"],
    report.rows.map((row) => [
      row.scenario,
      figure(row.ours, row.unit),
      `${row.referenceLabel}: ${figure(row.reference, row.unit)}`,
      ratioText(row),
      `${row.comparison === "atLeast" ? "≥" : "≤"} ${number(row.target, 2)}x`,
      passes(row) ? "pass" : `**FAIL**${row.problem ? ` (${row.problem})` : ""}`,
    ]),
  );
  const references = markdownTable(
    ["reference, same run", "figure"],
    report.references.map((f) => [f.what, figure(f.value, f.unit)]),
  );
  const parts = [
    `# Benchmark results`,
    `${report.date} · ${report.machine}`,
    `Mode: ${report.mode}; our server: ${report.workers === 1 ? "one process" : `${report.workers} processes (node:cluster)`}; HTTP/1.1, 50 connections (autocannon).`,
    results,
    references,
  ];
  if (report.scaling.length > 0) {
    parts.push(
      markdownTable(
        ["scaling", "1 process", `${report.workers} processes`, "speed-up"],
        report.scaling.map((s) => [s.scenario, figure(s.one, "req/s"), figure(s.many, "req/s"), `${number(s.many / s.one, 2)}x`]),
      ),
    );
  }
  if (report.notes.length > 0) parts.push(report.notes.map((n) => `- ${n}`).join("\n"));
  return `${parts.join("\n\n")}\n`;
}

/** Write bench/results/latest.md and latest.json. */
export function writeReport(report: Report, dir = "bench/results"): string {
  mkdirSync(dir, { recursive: true });
  const markdown = renderMarkdown(report);
  writeFileSync(join(dir, "latest.md"), markdown);
  const json = { ...report, rows: report.rows.map((row) => ({ ...row, ratio: ratioOf(row), pass: passes(row) })) };
  writeFileSync(join(dir, "latest.json"), `${JSON.stringify(json, null, 2)}\n`);
  return markdown;
}
