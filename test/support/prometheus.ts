/** One sample of the Prometheus text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/y;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
const SUFFIXES = ["_bucket", "_sum", "_count"];

/**
 * Parse the text format (version 0.0.4) strictly: every line a comment,
 * HELP, TYPE or sample; every sample of a family whose TYPE was declared.
 * Throws on anything else.
 */
export function parsePrometheusText(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line === "") continue;
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1}: ${why}: ${line}`);
    };
    if (line.startsWith("#")) {
      const type = new RegExp(`^# TYPE (${NAME}) (\\w+)$`).exec(line);
      if (type) {
        if (!TYPES.has(type[2]!)) fail("unknown type");
        types.set(type[1]!, type[2]!);
      } else if (!new RegExp(`^# HELP ${NAME} `).test(line)) fail("unexpected comment");
      continue;
    }
    const match = SAMPLE.exec(line) ?? fail("not a sample");
    const [, name, labelText = "", rawValue] = match;
    const family = types.has(name!) ? name! : SUFFIXES.map((s) => (name!.endsWith(s) ? name!.slice(0, -s.length) : "")).find((f) => types.has(f));
    if (!family) fail("sample without a declared TYPE");
    const labels: Record<string, string> = {};
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < labelText.length) {
      const label = LABEL.exec(labelText) ?? fail("malformed labels");
      labels[label[1]!] = label[2]!.replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1");
    }
    // Values are read as Go's ParseFloat reads them, which ignores case in NaN and Inf
    // (prom-client writes "Nan" for an event-loop lag with no samples since the last scrape).
    const special = rawValue!.toLowerCase();
    const value = special === "+inf" || special === "inf" ? Infinity : special === "-inf" ? -Infinity : Number(rawValue);
    if (Number.isNaN(value) && special !== "nan") fail("bad value");
    samples.push({ name: name!, labels, value });
  }
  return samples;
}

/** The value of the one sample with this name whose labels include `labels`; 0 when absent. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}
