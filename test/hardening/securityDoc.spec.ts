import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";

/**
 * SECURITY.md names its proof as `file` › "title" (several titles may follow
 * one file). Each must still exist, or the page claims what nothing proves.
 */
describe("SECURITY.md", () => {
  const doc = readFileSync("SECURITY.md", "utf8");

  /** [file, title] for every reference; "…" in a title stands for a part the test computes. */
  function references(): Array<[string, string]> {
    const found: Array<[string, string]> = [];
    for (const line of doc.split("\n")) {
      let file: string | undefined;
      for (const match of line.matchAll(/`(test\/[^`]+\.spec\.ts)`|› "([^"]+)"/g)) {
        if (match[1]) file = match[1];
        else if (file) found.push([file, match[2]!]);
      }
    }
    return found;
  }

  it("points every claim at a test that exists", () => {
    const refs = references();
    assert.ok(refs.length > 40, `found ${refs.length} references`);
    const missing = refs.filter(([file, title]) => {
      if (!existsSync(file)) return true;
      const source = readFileSync(file, "utf8");
      // Titles built from template literals or loops: compare the literal pieces around "…" and ${…}.
      const pieces = title.split("…").map((p) => p.trim()).filter((p) => p.length > 0);
      return !pieces.every((piece) => source.includes(piece) || templated(source, piece));
    });
    assert.deepEqual(missing, []);
  });

  it("names only test files that exist", () => {
    for (const [file] of doc.matchAll(/test\/[\w/.-]+\.spec\.ts/g)) assert.ok(existsSync(file), file);
  });
});

/**
 * A title piece that a test builds from a template or a table (`${page} (${status})`):
 * every word of it appears in the source, even if not side by side.
 */
function templated(source: string, piece: string): boolean {
  const words = piece.match(/[A-Za-z][A-Za-z'-]{3,}/g) ?? [];
  return words.length > 0 && words.every((w) => source.includes(w));
}
