import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("injection", () => {
  describe("SQL: every raw statement is a literal, values go in bindings", () => {
    /** Knex's raw entry points, and the drivers' own (pg `query`, sqlite3 `exec`). */
    const RAW_CALLS = new Set([
      "raw", "whereRaw", "orWhereRaw", "andWhereRaw", "havingRaw", "orHavingRaw", "orderByRaw", "groupByRaw", "joinRaw", "fromRaw",
      "query", "exec",
    ]);

    /** Raw SQL calls whose statement is not a plain string literal, as `file:line: code`. */
    function unsafeRawCalls(fileName: string, source: string): string[] {
      const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
      // `PATTERN.exec(text)` is a RegExp, not SQL: names bound to regex literals are skipped.
      const regexNames = new Set<string>();
      // A name bound to literal text only (`const S = "a" + "b"`) is a literal statement too.
      const literalNames = new Set<string>();
      const isLiteralText = (e: ts.Expression): boolean =>
        ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e) ||
        (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.PlusToken && isLiteralText(e.left) && isLiteralText(e.right));
      const found: string[] = [];
      const visit = (node: ts.Node): void => {
        if (ts.isVariableDeclaration(node) && node.initializer && ts.isRegularExpressionLiteral(node.initializer) && ts.isIdentifier(node.name)) {
          regexNames.add(node.name.text);
        }
        if (ts.isVariableDeclaration(node) && node.initializer && isLiteralText(node.initializer) && ts.isIdentifier(node.name) &&
          ts.isVariableDeclarationList(node.parent) && (node.parent.flags & ts.NodeFlags.Const) !== 0) {
          literalNames.add(node.name.text);
        }
        if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && RAW_CALLS.has(node.expression.name.text)) {
          const receiver = node.expression.expression;
          const isRegex = ts.isRegularExpressionLiteral(receiver) || (ts.isIdentifier(receiver) && regexNames.has(receiver.text));
          const statement = node.arguments[0];
          const literal = statement !== undefined && (isLiteralText(statement) || (ts.isIdentifier(statement) && literalNames.has(statement.text)));
          if (!isRegex && !literal) {
            const { line } = file.getLineAndCharacterOfPosition(node.getStart());
            found.push(`${fileName}:${line + 1}: ${node.getText().slice(0, 120)}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(file);
      return found;
    }

    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []));

    it("finds raw SQL built from strings, so that a pass means something", () => {
      const bad = [
        "db.raw(`select * from users where name = '${name}'`);",
        "db('users').whereRaw(\"name = '\" + name + \"'\");",
        "conn.query(statement);",
        "knex.raw(sql, [value]);",
        "let S = 'select 1'; knex.raw(S);",
        "const S = `select ${name}`; knex.raw(S);",
        "const S = 'select ' + name; knex.raw(S);",
      ];
      for (const code of bad) assert.equal(unsafeRawCalls("sample.ts", code).length, 1, code);
      assert.deepEqual(unsafeRawCalls("sample.ts", "db.raw('select ?', [x]); const P = /a/; P.exec(s); /b/.exec(s);"), []);
      assert.deepEqual(unsafeRawCalls("sample.ts", "const S = 'select ' + 'x from t where a = ?'; db.raw(S, [a]);"), []);
    });

    it("has no such call anywhere in src/", () => {
      const files = sources("src");
      assert.ok(files.length > 50, "the walk found the sources");
      assert.deepEqual(files.flatMap((f) => unsafeRawCalls(f, readFileSync(f, "utf8"))), []);
    });
  });

  describe("HTML: the login and error pages escape everything they echo", () => {
    /** Script and attribute breakers, each a way out of text or of a quoted attribute. */
    const PAYLOADS = [
      "<script>alert(1)</script>",
      "\"><img src=x onerror=alert(1)>",
      "' onfocus='alert(1)' autofocus='",
      "</title><script>alert(1)</script>",
      "<svg/onload=alert(1)>",
    ];
    /** Every tag and attribute the page templates use; anything else came from input. */
    const TAGS = new Set(["!doctype", "html", "head", "meta", "title", "link", "body", "main", "h1", "p", "strong", "form", "input", "label", "button", "div", "span", "ul", "li", "img", "code"]);
    const ATTRIBUTES = new Set([
      "lang", "charset", "name", "content", "rel", "href", "class", "id", "role", "method", "action", "type", "value", "for", "autocomplete",
      "autocapitalize", "spellcheck", "required", "autofocus", "aria-describedby", "src", "alt", "width", "height", "html",
    ]);

    /**
     * The page's markup is only the template's: known tags with known
     * attributes, no script URL, and the payload nowhere unescaped. Attribute
     * values are consumed whole, so escaped text inside them is not mistaken
     * for an attribute.
     */
    function assertInert(html: string, payload: string): void {
      assert.ok(!html.includes(payload), `raw payload in page: ${payload}`);
      assert.doesNotMatch(html, /<script/i);
      for (const [, tag, attributes] of html.matchAll(/<\/?([!a-zA-Z][a-zA-Z0-9]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g)) {
        assert.ok(TAGS.has(tag!.toLowerCase()), `tag <${tag}>`);
        for (const [, name, value] of attributes!.matchAll(/\s*([^\s"'=<>/]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g)) {
          assert.ok(ATTRIBUTES.has(name!.toLowerCase()), `attribute ${name} in <${tag}>`);
          assert.doesNotMatch(value ?? "", /^["']?\s*javascript:/i, `script URL in ${name}`);
        }
      }
    }

    const PROVIDER = {
      name: "evil",
      type: "Custom",
      clientId: "c",
      clientSecret: "s",
      authUrl: "https://id.example/authorize",
      scope: "openid",
      tokenUrl: "https://id.example/token",
      userInfoUrl: "https://id.example/userinfo",
    };
    let server: RunningServer;
    before(async () => {
      server = await startTestServer({
        config: {
          applications: [{ ...TEST_APP, providers: PAYLOADS.map((_, i) => `evil${i}`) }],
          users: [TEST_USER],
          // Each provider carries a payload in the two fields shown on the page: its label and its favicon URL.
          providers: PAYLOADS.map((payload, i) => ({
            ...PROVIDER,
            name: `evil${i}`,
            displayName: payload,
            favicon: `https://id.example/f.ico?${payload.replace(/ /g, "")}`,
          })),
        },
      });
    });
    after(() => server.close());

    it("recognises markup that came from input, so that a pass means something", () => {
      const payload = "<b>";
      assert.throws(() => assertInert(`<p><img src=x onerror=alert(1)></p>`, payload), /attribute onerror/);
      assert.throws(() => assertInert(`<p><svg></p>`, payload), /tag <svg>/);
      assert.throws(() => assertInert(`<p><a href="javascript:alert(1)"></p>`, payload), /tag <a>/);
      assert.throws(() => assertInert(`<p><img src="javascript:alert(1)"></p>`, payload), /script URL in src/);
      assert.throws(() => assertInert(`<p>${payload}</p>`, payload), /raw payload/);
      assertInert(`<p><input value="&#39; onfocus=&#39;alert(1)"></p>`, payload);
    });

    it("through provider labels and favicon URLs on the login page", async () => {
      const html = await (await browse(authorizeUrl(server.url), new CookieJar())).text();
      assert.match(html, /<form method="post" action="\/login\/oauth\/provider\/evil0">/);
      for (const payload of PAYLOADS) {
        assertInert(html, payload);
        assert.ok(html.includes(`Sign in with ${payload.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)}`), `escaped label for ${payload}`);
      }
    });

    for (const payload of PAYLOADS) {
      it(`through the user name typed into a failed sign-in: ${payload}`, async () => {
        const jar = new CookieJar();
        const fields = loginFormFields(await (await browse(authorizeUrl(server.url), jar)).text());
        const res = await submit(`${server.url}/login`, { ...fields, username: payload, password: "wrong" }, jar);
        assert.equal(res.status, 400);
        const html = await res.text();
        assertInert(html, payload);
        assert.match(html, /value="[^"]*&#/, "the name is echoed back, escaped");
      });

      it(`through error descriptions on the error page (a repeated or mistyped parameter named): ${payload}`, async () => {
        const repeated = new URL(authorizeUrl(server.url));
        repeated.searchParams.append(payload, "1");
        repeated.searchParams.append(payload, "2");
        const res = await browse(repeated.href, new CookieJar());
        assert.equal(res.status, 400);
        assertInert(await res.text(), payload.slice(0, 64));

        const json = await fetch(`${server.url}/login/oauth/authorize`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ client_id: TEST_APP.clientId, [payload]: { nested: true } }),
        });
        assert.equal(json.status, 400);
        assertInert(await json.text(), payload.slice(0, 64));
      });

      it(`through login_hint, prefilled on the login page: ${payload}`, async () => {
        const res = await browse(authorizeUrl(server.url, { login_hint: payload }), new CookieJar());
        assert.equal(res.status, 200);
        const html = await res.text();
        assertInert(html, payload);
        assert.ok(html.includes(`value="${payload.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)}"`), "the hint is echoed back, escaped");
      });

      it(`through state and error descriptions in a form_post page: ${payload}`, async () => {
        const res = await browse(authorizeUrl(server.url, { state: payload, response_type: payload, response_mode: "form_post" }), new CookieJar());
        assert.equal(res.status, 200);
        const html = await res.text();
        // The page's one script is our own file; anything else is input.
        const ownScript = '<script src="/login/assets/form-post.js"></script>';
        assert.ok(html.includes(ownScript));
        assertInert(html.replace(ownScript, ""), payload);
        assert.match(html, /name="error" value="unsupported_response_type"/);
      });

      it(`through a forged CSRF cookie, which is never reflected: ${payload}`, async () => {
        const res = await fetch(authorizeUrl(server.url), { headers: { cookie: `identity_csrf=${encodeURIComponent(payload)}` } });
        const html = await res.text();
        assertInert(html, payload);
        assert.ok(!html.includes(encodeURIComponent(payload)));
      });

      it(`through state and error descriptions sent back in the redirect, percent-encoded: ${payload}`, async () => {
        const res = await browse(authorizeUrl(server.url, { state: `${payload}\r\nset-cookie: x=1`, response_type: payload }), new CookieJar());
        assert.equal(res.status, 303);
        const location = res.headers.get("location")!;
        assert.doesNotMatch(location, /[<>"'\s]/, "nothing in the Location needs escaping");
        assert.equal(res.headers.get("set-cookie"), null, "no header smuggled in through state");
        const params = new URL(location).searchParams;
        assert.equal(params.get("state"), `${payload}\r\nset-cookie: x=1`);
        assert.equal(params.get("error"), "unsupported_response_type");
      });
    }

    it("refuses markup in an application name at the door (admin input is validated)", async () => {
      await assert.rejects(
        startTestServer({ config: { applications: [{ ...TEST_APP, name: PAYLOADS[0] }], users: [TEST_USER] } }),
        /applications\[0\].*name: must be 1-100 letters, digits or _ \. @ -/,
      );
    });
  });
});
