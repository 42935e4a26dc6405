import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { listeningUrl, type RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { INTROSPECT_PATH, TOKEN_PATH } from "../support/oauth.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { basicAuth, RecordingLogger, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { scaledMs } from "../support/deadline.js";

interface Certificate {
  cert: string;
  key: string;
  fingerprint256: string;
  serialNumber: string;
}

/** A fresh self-signed P-256 certificate for 127.0.0.1, by openssl. */
function makeCertificate(dir: string, name: string): Certificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", keyFile, "-out", certFile],
    { stdio: "ignore" },
  );
  const cert = readFileSync(certFile, "utf8");
  const parsed = new X509Certificate(cert);
  return { cert, key: readFileSync(keyFile, "utf8"), fingerprint256: parsed.fingerprint256, serialNumber: parsed.serialNumber };
}

/** Replaces a file the way a certificate manager does: write aside, then rename over it. */
function replaceFile(path: string, contents: string): void {
  writeFileSync(`${path}.new`, contents);
  renameSync(`${path}.new`, path);
}

interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** The certificate the server showed on this (new) connection. */
  fingerprint256: string;
}

/** One request on a new HTTPS connection (HTTP/1.1), trusting `ca`. */
function httpsCall(url: string, ca: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: init.method ?? "GET", headers: init.headers, ca, agent: false }, (res) => {
      const fingerprint256 = (res.socket as tls.TLSSocket).getPeerCertificate().fingerprint256;
      let text = "";
      res.setEncoding("utf8").on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined, fingerprint256 }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

const postFormTls = (url: string, ca: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  httpsCall(url, ca, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });

/** One GET on an open HTTP/2 session. */
function h2Get(session: http2.ClientHttp2Session, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":path": path, ...headers });
    let status = 0;
    let body = "";
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.setEncoding("utf8").on("data", (c: string) => (body += c));
    stream.on("end", () => resolve({ status, body })).on("error", reject);
  });
}

/** The certificate a new TLS connection is shown, and the protocol ALPN picked. */
function handshake(port: number, alpn: string[] = ["h2", "http/1.1"]): Promise<{ fingerprint256: string; alpn: string | false }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: alpn }, () => {
      const result = { fingerprint256: socket.getPeerCertificate().fingerprint256, alpn: socket.alpnProtocol ?? false };
      socket.destroy();
      resolve(result);
    });
    socket.on("error", reject);
  });
}

const PASSWORD_GRANT = {
  grant_type: "password",
  client_id: TEST_APP.clientId,
  client_secret: TEST_APP.clientSecret,
  username: TEST_USER.name,
  password: TEST_USER.password,
  scope: "openid profile",
};

describe("TLS on the port itself (--tls-cert, --tls-key)", function () {
  this.timeout(60_000);
  let dir: string;
  let first: Certificate;
  let certFile: string;
  let keyFile: string;
  let server: RunningServer;
  const logger = new RecordingLogger();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "identity-tls-"));
    first = makeCertificate(dir, "first");
    certFile = join(dir, "server.crt");
    keyFile = join(dir, "server.key");
    writeFileSync(certFile, first.cert);
    writeFileSync(keyFile, first.key);
    server = await startTestServer({ overrides: { tlsCert: certFile, tlsKey: keyFile }, logger });
  });
  after(() => server?.close());

  it("prints an https URL, which is the issuer, and refuses a certificate without its key", async () => {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(server.issuer, server.url);
    assert.equal(listeningUrl("0.0.0.0", 8443, true), "https://127.0.0.1:8443");
    assert.equal(listeningUrl("::", 8443, true), "https://[::1]:8443");
    await assert.rejects(startTestServer({ overrides: { tlsCert: certFile } }), /--tls-cert and --tls-key go together/);
    const other = makeCertificate(dir, "other");
    writeFileSync(join(dir, "other-mismatch.key"), other.key);
    await assert.rejects(
      startTestServer({ overrides: { tlsCert: certFile, tlsKey: join(dir, "other-mismatch.key") } }),
      /TLS certificate .* and key .* are unusable/,
    );
    await assert.rejects(startTestServer({ overrides: { tlsCert: join(dir, "missing.crt"), tlsKey: keyFile } }), /cannot read the TLS certificate/);
  });

  it("negotiates h2 and http/1.1 by ALPN, and speaks nothing but TLS", async () => {
    assert.equal((await handshake(server.port)).alpn, "h2");
    assert.equal((await handshake(server.port, ["http/1.1"])).alpn, "http/1.1");
    // Cleartext HTTP on the TLS port gets no answer: the handshake fails and the connection closes.
    await assert.rejects(fetch(`http://127.0.0.1:${server.port}/healthz`));
  });

  it("REST over HTTPS: discovery names https endpoints, a token is issued and introspected", async () => {
    const discovery = await httpsCall(`${server.url}/.well-known/openid-configuration`, first.cert);
    assert.equal(discovery.status, 200);
    assert.equal(discovery.body.issuer, server.url);
    assert.equal(discovery.body.token_endpoint, `${server.url}${TOKEN_PATH}`);
    assert.equal(discovery.fingerprint256, first.fingerprint256);

    const token = await postFormTls(server.url + TOKEN_PATH, first.cert, PASSWORD_GRANT);
    assert.equal(token.status, 200, JSON.stringify(token.body));
    const introspection = await postFormTls(server.url + INTROSPECT_PATH, first.cert, { token: token.body.access_token }, {
      authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret),
    });
    assert.equal(introspection.status, 200);
    assert.equal(introspection.body.active, true);
    assert.equal(introspection.body.iss, server.url);
    assert.equal(introspection.body.username, TEST_USER.name);
  });

  it("gRPC over TLS (grpc-js with the CA), and Connect, gRPC-Web and gRPC through Connect's clients over HTTPS", async () => {
    const clients = grpcJsClients(server.port, grpc.credentials.createSsl(Buffer.from(first.cert)));
    try {
      const token = await grpcJsCall(clients.token, "Token", PASSWORD_GRANT);
      assert.ifError(token.error);
      assert.ok(token.response.access_token);
      const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
      const introspected = await grpcJsCall(clients.introspection, "Introspect", { token: token.response.access_token }, basic);
      assert.ifError(introspected.error);
      assert.equal(introspected.response.active, true);
      assert.equal(introspected.response.iss, server.url);
    } finally {
      for (const client of Object.values(clients)) client.close();
    }

    const ca = first.cert;
    const request = { grantType: "client_credentials", clientId: TEST_APP.clientId, clientSecret: TEST_APP.clientSecret };
    const transports = {
      "Connect, HTTP/1.1": createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", nodeOptions: { ca } }),
      "Connect, HTTP/2": createConnectTransport({ baseUrl: server.url, httpVersion: "2", nodeOptions: { ca } }),
      "gRPC-Web, HTTP/1.1": createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1", nodeOptions: { ca } }),
      "gRPC, HTTP/2": createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca } }),
    };
    for (const [name, transport] of Object.entries(transports)) {
      const answer = await createClient(TokenService, transport).token(request);
      assert.equal(answer.tokenType, "Bearer", name);
      const active = await createClient(IntrospectionService, transport).introspect(
        { token: answer.accessToken },
        { headers: { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) } },
      );
      assert.equal(active.active, true, name);
    }
  });

  it("keeps the connection limits: an oversized header block is refused with 431 on HTTP/1.1 and HTTP/2", async () => {
    const big = { "x-filler": "a".repeat(20_000) };
    const h1 = await httpsCall(`${server.url}/healthz`, first.cert, { headers: big });
    assert.equal(h1.status, 431);
    const session = http2.connect(server.url, { ca: first.cert });
    try {
      const h2 = await h2Get(session, "/healthz", big);
      assert.equal(h2.status, 431);
    } finally {
      session.close();
    }
  });

  describe("in headless Chromium", () => {
    // The test's certificate is its own, trusted by no browser.
    const chromium = useChromium({ context: { ignoreHTTPSErrors: true } });
    let callback: CallbackServer;
    let ours: RunningServer;

    before(async () => {
      callback = await startCallbackServer();
      ours = await startTestServer({
        config: { applications: [{ ...TEST_APP, redirectUris: [callback.url] }], users: [TEST_USER] },
        overrides: { tlsCert: certFile, tlsKey: keyFile },
      });
    });
    after(async () => {
      await ours?.close();
      await callback?.close();
    });

    it("reads discovery and signs in over HTTPS, with Secure cookies, and the code is exchanged over HTTPS", async () => {
      const { context, page } = chromium;
      const discovery = await page.goto(`${ours.url}/.well-known/openid-configuration`);
      assert.equal(discovery?.status(), 200);
      assert.equal((await discovery!.json()).issuer, ours.url);
      const security = await discovery!.securityDetails();
      assert.equal(security?.subjectName, "127.0.0.1");

      await page.goto(authorizeUrl(ours.url, { redirect_uri: callback.url, scope: "openid", state: "over-tls" }));
      await page.getByLabel("Username").fill(TEST_USER.name);
      await page.getByLabel("Password").fill(TEST_USER.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL((url) => url.href.startsWith(callback.url));
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get("state"), "over-tls");
      assert.equal(landed.searchParams.get("iss"), ours.url);
      const cookies = await context.cookies(ours.url);
      assert.ok(cookies.length > 0);
      for (const cookie of cookies) assert.equal(cookie.secure, true, cookie.name);

      const token = await postFormTls(ours.url + TOKEN_PATH, first.cert, {
        grant_type: "authorization_code",
        code: landed.searchParams.get("code")!,
        redirect_uri: callback.url,
        client_id: TEST_APP.clientId,
        client_secret: TEST_APP.clientSecret,
      });
      assert.equal(token.status, 200, JSON.stringify(token.body));
      assert.ok(token.body.id_token);
    });
  });

  describe("a certificate replaced while running", () => {
    it("serves new connections with the new pair within 10 s, while an open HTTP/2 connection keeps working; a bad pair is logged and the old one kept", async function () {
      // Each wait below is 10 s on an idle machine, longer on a loaded one.
      const boundMs = scaledMs(10_000);
      this.timeout(30_000 + 3 * boundMs);
      const second = makeCertificate(dir, "second");
      const bothCas = first.cert + second.cert;
      // Connections opened before the swap: a plain HTTP/2 session and a grpc-js channel that trust only the first.
      const session = http2.connect(server.url, { ca: first.cert });
      const clients = grpcJsClients(server.port, grpc.credentials.createSsl(Buffer.from(first.cert)));
      try {
        assert.equal((await h2Get(session, "/healthz")).status, 200);
        const before = await grpcJsCall(clients.token, "Token", PASSWORD_GRANT);
        assert.ifError(before.error);

        replaceFile(keyFile, second.key);
        replaceFile(certFile, second.cert);
        const swapped = Date.now();
        let seen = first.fingerprint256;
        while (seen !== second.fingerprint256 && Date.now() - swapped < boundMs) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          seen = (await handshake(server.port)).fingerprint256;
        }
        assert.equal(seen, second.fingerprint256, "a new connection still sees the first certificate 10 s after the swap");
        assert.equal((await handshake(server.port)).alpn, "h2");
        assert.ok(logger.lines.some((l) => l.message === "TLS certificate reloaded" && l.fields?.serial === second.serialNumber), logger.text());

        // The connections opened before keep working, on the first certificate.
        const again = await h2Get(session, "/healthz");
        assert.equal(again.status, 200);
        assert.equal((session.socket as tls.TLSSocket).getPeerCertificate().fingerprint256, first.fingerprint256);
        const after = await grpcJsCall(clients.token, "Token", PASSWORD_GRANT);
        assert.ifError(after.error);
        assert.ok(after.response.access_token);

        // New connections of every kind, trusting the new certificate.
        const rest = await postFormTls(server.url + TOKEN_PATH, bothCas, PASSWORD_GRANT);
        assert.equal(rest.status, 200);
        assert.equal(rest.fingerprint256, second.fingerprint256);
        const fresh = grpcJsClients(server.port, grpc.credentials.createSsl(Buffer.from(second.cert)));
        try {
          assert.ifError((await grpcJsCall(fresh.token, "Token", PASSWORD_GRANT)).error);
        } finally {
          for (const client of Object.values(fresh)) client.close();
        }

        // A key that does not match its certificate: logged, and the second pair stays.
        const errorsBefore = logger.lines.filter((l) => l.message.startsWith("TLS certificate not reloaded")).length;
        replaceFile(keyFile, first.key);
        const deadline = Date.now() + boundMs;
        while (logger.lines.filter((l) => l.message.startsWith("TLS certificate not reloaded")).length === errorsBefore && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        const refusal = logger.lines.filter((l) => l.message.startsWith("TLS certificate not reloaded")).at(-1);
        assert.ok(refusal, logger.text());
        assert.equal(refusal.level, "error");
        assert.match(String(refusal.fields?.error), /unusable/);
        assert.doesNotMatch(logger.text(), /PRIVATE KEY/);
        assert.equal((await handshake(server.port)).fingerprint256, second.fingerprint256);
        assert.equal((await httpsCall(`${server.url}/healthz`, second.cert)).status, 200);

        // Put right, it is taken.
        const reloads = () => logger.lines.filter((l) => l.message === "TLS certificate reloaded").length;
        const reloadsBefore = reloads();
        replaceFile(keyFile, second.key);
        const fixed = Date.now() + boundMs;
        while (reloads() === reloadsBefore && Date.now() < fixed) await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(reloads(), reloadsBefore + 1);
      } finally {
        session.close();
        for (const client of Object.values(clients)) client.close();
      }
    });
  });
});
