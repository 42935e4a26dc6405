import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The documents stay short and true to the tree: the README is a front page
 * (at most 200 lines, its Performance section 25), each page of docs/ at
 * most 15 KB (the performance page 12 KB: its history lives in git), and
 * every `src/...` or `test/...` path they name exists, so that a move or a
 * rename cannot leave them pointing at nothing.
 */

const KB = 1024;
const README_MAX_LINES = 200;
const README_PERFORMANCE_MAX_LINES = 25;
const DOC_MAX_BYTES = 15 * KB;
const PERFORMANCE_MAX_BYTES = 12 * KB;

const docs = readdirSync("docs")
  .filter((name) => name.endsWith(".md"))
  .map((name) => join("docs", name));
const checked = ["README.md", "SECURITY.md", ...docs];

/** Lines of a file, as `wc -l` counts them. */
function lineCount(text: string): number {
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/**
 * The `src/...` and `test/...` paths a Markdown text names. A path starts at
 * `src/` or `test/` not preceded by a path character (so URLs and
 * `test-output/` do not count) and ends where path characters end (a
 * trailing `.` or `,` is the sentence's). A glob or placeholder (`src/rpc/*.ts`,
 * `{name}`) names the folder before it.
 */
function repoPaths(markdown: string): string[] {
  const found = new Set<string>();
  for (const [match] of markdown.matchAll(/(?<![\w./-])(?:src|test)\/[\w./*{}-]*/g)) {
    let path = match;
    const wildcard = path.search(/[*{]/);
    if (wildcard >= 0) path = path.slice(0, path.lastIndexOf("/", wildcard));
    path = path.replace(/[.,/]+$/, "");
    found.add(path);
  }
  return [...found];
}

/** Relative link targets of a Markdown text (`[x](docs/usage.md#part)` gives `docs/usage.md`). */
function relativeLinks(markdown: string): string[] {
  const found = new Set<string>();
  for (const [, target] of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z+.-]*:/i.test(target!) || target!.startsWith("#")) continue;
    found.add(target!.replace(/#.*$/, ""));
  }
  return [...found];
}

describe("documents", () => {
  it(`keeps README.md to at most ${README_MAX_LINES} lines`, () => {
    const lines = lineCount(readFileSync("README.md", "utf8"));
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines; move detail to the doc that owns it`);
  });

  it(`keeps the README's Performance section to at most ${README_PERFORMANCE_MAX_LINES} lines`, () => {
    const section = /^## Performance\n[\s\S]*?(?=^## )/m.exec(readFileSync("README.md", "utf8"))?.[0];
    assert.ok(section, "README.md has no Performance section followed by another");
    const lines = lineCount(section);
    assert.ok(lines <= README_PERFORMANCE_MAX_LINES, `its Performance section has ${lines} lines; the detail belongs in docs/performance.md`);
  });

  it("keeps every page of docs/ to at most 15 KB, and docs/performance.md to 12 KB", () => {
    assert.ok(docs.length > 0);
    for (const file of docs) {
      const bytes = statSync(file).size;
      const max = file === join("docs", "performance.md") ? PERFORMANCE_MAX_BYTES : DOC_MAX_BYTES;
      assert.ok(bytes <= max, `${file} is ${bytes} bytes, over ${max}`);
    }
  });

  it("names only src/ and test/ paths that exist", () => {
    const missing: string[] = [];
    let named = 0;
    for (const file of checked) {
      for (const path of repoPaths(readFileSync(file, "utf8"))) {
        named++;
        if (!existsSync(path)) missing.push(`${file}: ${path}`);
      }
    }
    assert.ok(named > 20, `found only ${named} paths`);
    assert.deepEqual(missing, []);
  });

  it("links only to files that exist", () => {
    const missing: string[] = [];
    for (const file of checked) {
      for (const target of relativeLinks(readFileSync(file, "utf8"))) {
        if (!existsSync(join(dirname(file), target))) missing.push(`${file}: ${target}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("finds the paths and links it checks, and only those", () => {
    const text =
      "See `src/http/transport.ts`, src/shared/log.ts. and `src/rpc/*.ts`; `test/e2e` and `src/`, " +
      "not test-output/x, https://example.com/src/x.ts or bench/src/y.ts; [map](docs/architecture.md#fast-paths), [w](https://x.example/a.md).";
    assert.deepEqual(repoPaths(text), ["src/http/transport.ts", "src/shared/log.ts", "src/rpc", "test/e2e", "src"]);
    assert.deepEqual(relativeLinks(text), ["docs/architecture.md"]);
    assert.equal(lineCount("a\nb\n"), 2);
  });
});
