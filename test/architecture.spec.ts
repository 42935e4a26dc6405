import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import ts from "typescript";

/**
 * The layer rules of docs/architecture.md, checked over the real import
 * graph (type-only imports included: a type is a dependency too). madge
 * checks for cycles in CI; this checks which folder may lean on which.
 */

/** What each folder of src/ may import besides itself. `app/` and `main.ts` are the composition root: anything. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  shared: [],
  store: ["shared"],
  oauth: ["shared", "store", "accounts", "federation"],
  accounts: ["shared", "store", "oauth", "federation"],
  federation: ["shared", "store", "oauth", "accounts"],
  domain: ["shared", "store", "oauth", "accounts", "federation"],
  http: ["shared", "oauth"],
  // Front doors: the domain and the shared HTTP layer, never the store and never each other,
  // except the REST facade, which is generated from the RPC bindings.
  rpc: ["shared", "http", "domain", "oauth", "accounts", "federation", "gen"],
  rest: ["shared", "http", "domain", "oauth", "rpc", "gen"],
  web: ["shared", "http", "domain", "oauth", "accounts", "federation", "gen"],
  ops: ["shared", "http", "domain", "oauth", "gen"],
};
const COMPOSITION_ROOT = new Set(["app", "main.ts"]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** `src/rpc/admin.ts` -> `rpc`; `gen/...` -> `gen`; `src/main.ts` -> `main.ts`. */
function layerOf(path: string): string {
  const parts = normalize(path).split(/[\\/]/);
  return parts[0] === "gen" ? "gen" : parts[1]!;
}

function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith("."))
    .map((name) => relative(".", join(dirname(file), name)));
}

describe("architecture", () => {
  const files = sourceFiles("src");

  it("keeps at most three files at the root of src/", () => {
    const loose = readdirSync("src", { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
    assert.ok(loose.length <= 3, `loose files: ${loose.join(", ")}`);
  });

  it("gives every folder of src/ a rule", () => {
    const folders = readdirSync("src", { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const unruled = folders.filter((f) => !(f in MAY_IMPORT) && !COMPOSITION_ROOT.has(f));
    assert.deepEqual(unruled, []);
  });

  it("opens every folder of src/ with a README saying what belongs there and what it may import", () => {
    const folders = readdirSync("src", { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const bare = folders.filter((f) => {
      const readme = join("src", f, "README.md");
      return !existsSync(readme) || !readFileSync(readme, "utf8").includes("May import:");
    });
    assert.deepEqual(bare, []);
  });

  it("lets imports point only where the layer rules allow", () => {
    const broken: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      if (COMPOSITION_ROOT.has(from)) continue;
      for (const target of importsOf(file)) {
        const to = layerOf(target);
        if (to !== from && !MAY_IMPORT[from]!.includes(to)) broken.push(`${file} -> ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it("leaves transactions to the store: oauth/ and federation/ never touch the database handle", () => {
    const handle = /\.db\b|\.transaction\(|from "knex"|\bDb\b/;
    const touching = files
      .filter((file) => ["oauth", "federation"].includes(layerOf(file)))
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, i) => (handle.test(line.replace(/\/\/.*$|^\s*\*.*$/, "")) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
      );
    assert.deepEqual(touching, []);
  });

  it("lets the doors reach the domain only through its service objects: no store, no free function fed the store", () => {
    const doors = files.filter((file) => ["rpc", "rest", "web", "ops"].includes(layerOf(file)));
    const storeTouches = doors.flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (/\.store\b|\bStore\b/.test(line.replace(/\/\/.*$|^\s*\*.*$/, "")) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    assert.deepEqual(storeTouches, []);
    // Exported functions of the domain whose parameters take the store, or a bag of dependencies holding it.
    const fedTheStore = new Set(
      files
        .filter((file) => ["oauth", "accounts", "federation"].includes(layerOf(file)))
        .flatMap((file) =>
          [...readFileSync(file, "utf8").matchAll(/export (?:async )?function (\w+)(?:<[^>]*>)?\(([^)]*)\)/g)]
            .filter(([, , params]) => /\bStore\b|store:|Deps\b|deps:/.test(params!))
            .map(([, name]) => name!),
        ),
    );
    assert.ok(fedTheStore.has("introspectToken"), "the check finds such functions");
    const called = doors.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/import \{([^}]*)\} from "\.\.\/(?:oauth|accounts|federation)\//g)].flatMap(([, names]) =>
        names!.split(",").map((n) => n.trim().replace(/^type /, "")).filter((n) => fedTheStore.has(n)).map((n) => `${file}: ${n}`),
      ),
    );
    assert.deepEqual(called, []);
  });

  it("keeps the admin console (console/) a client of the contract: it imports gen/ and itself, and src/ never imports it", () => {
    const consoleFiles = readdirSync("console/src", { recursive: true, encoding: "utf8" })
      .filter((name) => /\.tsx?$/.test(name))
      .map((name) => join("console/src", name));
    assert.ok(consoleFiles.length > 0);
    const outside = consoleFiles.flatMap((file) =>
      importsOf(file).filter((target) => !target.startsWith(`console${sep}`) && !target.startsWith(`gen${sep}`)).map((target) => `${file} -> ${target}`),
    );
    assert.deepEqual(outside, []);
    const intoConsole = files.flatMap((file) => importsOf(file).filter((target) => target.startsWith(`console${sep}`)).map((target) => `${file} -> ${target}`));
    assert.deepEqual(intoConsole, []);
    assert.ok(readFileSync("docs/architecture.md", "utf8").includes("`console/`"), "docs/architecture.md names console/");
  });

  it("mirrors src/ in test/: every folder has unit tests under test/<folder>/", () => {
    const folders = readdirSync("src", { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const untested = folders.filter((f) => !existsSync(join("test", f)) || !readdirSync(join("test", f), { recursive: true, encoding: "utf8" }).some((n) => n.endsWith(".spec.ts")));
    assert.deepEqual(untested, []);
  });

  it("keeps every function in src/ to at most 100 lines", () => {
    const long: string[] = [];
    for (const file of files) {
      const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && "body" in node && node.body) {
          const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          if (lines > 100) long.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} (${lines} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    assert.deepEqual(long, []);
  });

  it("keeps every spec file to at most 800 lines", () => {
    const specs = readdirSync("test", { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".spec.ts"));
    const long = specs.filter((name) => readFileSync(join("test", name), "utf8").split("\n").length > 800);
    assert.deepEqual(long, []);
  });

  it("names every folder of src/ in docs/architecture.md", () => {
    const map = readFileSync("docs/architecture.md", "utf8");
    const folders = readdirSync("src", { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `src/${e.name}`);
    assert.deepEqual(folders.filter((f) => !map.includes(f)), []);
  });

  it("keeps docs/architecture.md under 10 KB", () => {
    assert.ok(readFileSync("docs/architecture.md").length <= 10 * 1024);
  });
});
