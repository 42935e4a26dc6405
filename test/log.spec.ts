import assert from "node:assert/strict";
import { SECRET_FIELDS } from "../src/log.js";
import { captureLogs } from "./support/logs.js";

describe("logger", () => {
  it("writes one JSON object per line with level name, time and message", () => {
    const logs = captureLogs("info");
    logs.logger.info("hello", { answer: 42 });
    logs.logger.debug("hidden at info");
    const lines = logs.lines();
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, "info");
    assert.equal(lines[0]!.msg, "hello");
    assert.equal(lines[0]!.answer, 42);
    assert.ok(!Number.isNaN(Date.parse(lines[0]!.time)));
    assert.equal(logs.logger.enabled("debug"), false);
  });

  it("redacts every secret field name at the top level and two objects deep", () => {
    const logs = captureLogs("info");
    const secrets = SECRET_FIELDS.map((name, i) => [name, `secret-value-${i}-x`] as const);
    const fields = Object.fromEntries(secrets);
    logs.logger.info("top", fields);
    logs.logger.info("one deep", { request: fields });
    logs.logger.info("two deep", { err: { request: fields } });
    const text = logs.text();
    for (const [name, value] of secrets) assert.ok(!text.includes(value), `${name} leaked`);
    const [top, oneDeep, twoDeep] = logs.lines();
    assert.equal(top!.password, "[redacted]");
    assert.equal(oneDeep!.request.authorization, "[redacted]");
    assert.equal(twoDeep!.err.request["set-cookie"], "[redacted]");
  });

  it("redacts a copy: the caller's objects keep their values", () => {
    const logs = captureLogs("info");
    const headers = { authorization: "Bearer keep-me", host: "example" };
    const fields = { headers, route: "/x" };
    logs.logger.info("request", fields);
    assert.equal(logs.lines()[0]!.headers.authorization, "[redacted]");
    assert.equal(logs.lines()[0]!.headers.host, "example");
    assert.equal(headers.authorization, "Bearer keep-me");
    assert.equal(fields.headers, headers);
  });
});
