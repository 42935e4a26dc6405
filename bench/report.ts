import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";

/** One row of the results table: our figure against a reference measured in the same run, in turns with it. */
export interface Row {
  scenario: string;
  ours: number;
  unit: "req/s" | "ms" | "MB";
  referenceLabel: string;
  reference: number;
  /** The ratio ours / reference must be at least (or at most) `target`; a row without one only reports its ratio. */
  comparison?: "atLeast" | "atMost";
  target?: number;
  /** Why the row fails whatever its ratio (e.g. failed responses). */
  problem?: string;
}

export interface Report {
  mode: string;
  rows: Row[];
  /** Figures measured in the run without a target of their own. */
  figures: string[];
  notes: string[];
}

export const ratioOf = (row: Row) => row.ours / row.reference;
const meets = (row: Row, ratio: number) => row.target === undefined || (row.comparison === "atMost" ? ratio <= row.target : ratio >= row.target);
export const passes = (row: Row) => !row.problem && meets(row, ratioOf(row));

export const number = (value: number, digits = 0) => value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const figure = (value: number, unit: Row["unit"]) => `${number(value, unit === "ms" ? 1 : 0)} ${unit}`;

/** The ratio to two decimals, or more where two would round it onto the target's other side (0.996x, not 1.00x, misses ≥ 1.00x). */
function ratioText(row: Row): string {
  let digits = 2;
  while (digits < 6 && meets(row, Number(ratioOf(row).toFixed(digits))) !== meets(row, ratioOf(row))) digits++;
  return `${number(ratioOf(row), digits)}x`;
}

/** The results table: the one README.md and docs/performance.md show. */
export function resultsTable(rows: readonly Row[]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const header = ["scenario", "ours", "reference", "ratio", "target", "result"];
  const result = (row: Row) => (passes(row) ? (row.target === undefined ? "reported" : "pass") : `**FAIL**${row.problem ? ` (${row.problem})` : ""}`);
  return [
    line(header),
    line(header.map(() => "---")),
    ...rows.map((row) =>
      line([
        row.scenario,
        figure(row.ours, row.unit),
        `${row.referenceLabel}: ${figure(row.reference, row.unit)}`,
        ratioText(row),
        row.target === undefined ? "—" : `${row.comparison === "atMost" ? "≤" : "≥"} ${number(row.target, 2)}x`,
        result(row),
      ]),
    ),
  ].join("\n");
}

/** Write bench/results/latest.md and latest.json; returns the Markdown. */
export function writeReport(report: Report, dir = "bench/results"): string {
  const cores = cpus();
  const machine = `${cores.length} × ${cores[0]?.model.trim() ?? "unknown CPU"}, ${(totalmem() / 1e9).toFixed(0)} GB RAM, Node ${process.version}; load average ${loadavg()[0]!.toFixed(1)} at the end`;
  const date = new Date().toISOString().slice(0, 10);
  const met = report.rows.filter((row) => row.target !== undefined && passes(row)).length;
  const markdown = [
    `# Benchmark results`,
    `${date} · ${machine} · ${report.mode} mode · met ${met} of ${report.rows.filter((row) => row.target !== undefined).length} targets`,
    resultsTable(report.rows),
    [...report.figures, ...report.notes].map((line) => `- ${line}`).join("\n"),
  ].join("\n\n");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "latest.md"), `${markdown}\n`);
  const rows = report.rows.map((row) => ({ ...row, ratio: ratioOf(row), pass: passes(row) }));
  writeFileSync(join(dir, "latest.json"), `${JSON.stringify({ date, machine, ...report, rows }, null, 2)}\n`);
  return markdown;
}

/** The problem of a row whose loads had failed responses. */
export const failed = (...results: { failures: number }[]) => {
  const count = results.reduce((n, r) => n + r.failures, 0);
  return count > 0 ? `${count} failed responses` : undefined;
};
