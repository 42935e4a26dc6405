import assert from "node:assert/strict";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, createContextValues } from "@connectrpc/connect";
import type { RunningServer } from "../../src/app/server.js";
import { OAuthError } from "../../src/oauth/errors.js";
import { buildRouteTable } from "../../src/rest/routes.js";
import type { GuardName } from "../../src/rpc/guards.js";
import { plainHandlerContext } from "../../src/rpc/handlerContext.js";
import { serviceBindings, type ServiceBinding } from "../../src/rpc/services.js";
import { ADMIN_TOKEN, startTestServer } from "../support/server.js";

/**
 * The guards each service file declares (src/rpc/guards.ts) hold on every
 * door. The methods come from the service descriptors and their declared
 * guards, never from a list written here.
 */

interface Answer {
  /** The gRPC status code, or the HTTP status where there is none (REST). */
  code: number;
  headers: Record<string, string | string[] | undefined>;
}

const envelope = (payload: Uint8Array, flags = 0) => {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
};

const CONNECT_CODES = new Map(Object.entries(Code).filter(([, v]) => typeof v === "number").map(([k, v]) => [k.replace(/[A-Z]/g, (c, i: number) => (i ? "_" : "") + c.toLowerCase()), v as number]));

/** A door: how to call one method with an empty request message. */
type Door = (server: RunningServer, path: string, headers: Record<string, string>) => Promise<Answer>;

function h2call(server: RunningServer, headers: http2.OutgoingHttpHeaders, body: Uint8Array): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(server.url);
    const stream = session.request({ ":method": "POST", te: "trailers", ...headers });
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (head = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", () => {});
    stream.on("error", (err) => {
      session.destroy();
      reject(err);
    });
    stream.on("end", () => {
      session.close();
      resolve({ code: Number(trailers["grpc-status"] ?? head["grpc-status"]), headers: head });
    });
    stream.end(body);
  });
}

async function h1call(server: RunningServer, path: string, init: { method: string; headers: Record<string, string>; body?: Uint8Array | string }) {
  const res = await fetch(server.url + path, init);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

const DOORS: Record<string, Door> = {
  "Connect (Connect's adapter)": async (server, path, headers) => {
    const { res, body } = await h1call(server, path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
    const code = res.status === 200 ? 0 : CONNECT_CODES.get(JSON.parse(body.toString()).code);
    return { code: code ?? -1, headers: Object.fromEntries(res.headers) };
  },
  "gRPC-Web (Connect's adapter)": async (server, path, headers) => {
    const { res, body } = await h1call(server, path, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", ...headers },
      body: envelope(new Uint8Array()),
    });
    const status = res.headers.get("grpc-status") ?? /grpc-status: ?(\d+)/.exec(body.toString("latin1"))?.[1];
    return { code: Number(status), headers: Object.fromEntries(res.headers) };
  },
  // A compressed call is left to Connect's gRPC handler (grpcUnary.spec.ts shows it).
  "gRPC, compressed (Connect's adapter)": (server, path, headers) =>
    h2call(server, { ":path": path, "content-type": "application/grpc", "grpc-encoding": "gzip", ...headers }, envelope(gzipSync(new Uint8Array()), 1)),
  "gRPC (the unary door)": (server, path, headers) => h2call(server, { ":path": path, "content-type": "application/grpc", ...headers }, envelope(new Uint8Array())),
};

const pathOf = (binding: ServiceBinding, method: DescMethod) => `/${binding.service.typeName}/${method.name}`;

function guarded(bindings: readonly ServiceBinding[], guard: GuardName) {
  return bindings.flatMap((binding) =>
    binding.service.methods.filter((m) => binding.guards[m.localName]?.includes(guard)).map((method) => ({ binding, method })),
  );
}

const NO_ADMIN_TOKEN: Record<string, Record<string, string>> = {
  "no token": {},
  "a wrong token": { authorization: `Bearer ${ADMIN_TOKEN}x` },
};

describe("method guards, on every door", () => {
  let server: RunningServer;
  let bindings: ServiceBinding[];

  before(async () => {
    server = await startTestServer({ overrides: { keyActivationDelaySeconds: 0 } });
    bindings = serviceBindings(server.domain);
  });
  after(() => server.close());

  it("are declared for every method, and admin for every method of the admin services", () => {
    for (const { service, guards } of bindings) {
      for (const method of service.methods) {
        const declared = guards[method.localName];
        assert.ok(Array.isArray(declared), `${service.typeName}.${method.name} declares its guards`);
        if (service.file.name === "identity/v1/admin") assert.ok(declared.includes("admin"), `${service.typeName}.${method.name} is an admin method`);
      }
    }
    // The admin services' methods and FederationService's provider administration.
    assert.ok(guarded(bindings, "admin").length >= 18, "the admin methods are found");
  });

  it("refuse every admin method without the admin token in the implementation object each door calls", async () => {
    for (const { binding, method } of guarded(bindings, "admin")) {
      for (const [name, headers] of Object.entries(NO_ADMIN_TOKEN)) {
        const ctx = plainHandlerContext({ service: binding.service, method, protocolName: "test", req: { method: "POST", headers }, url: "http://test/", values: createContextValues() });
        const impl = (binding.impl as unknown as Record<string, (req: unknown, ctx: unknown) => Promise<unknown>>)[method.localName]!;
        const err = await impl(create(method.input), ctx).then(
          () => assert.fail(`${method.name} answered with ${name}`),
          (e: unknown) => e,
        );
        assert.ok(err instanceof OAuthError && err.code === "invalid_token", `${method.name} with ${name}: ${String(err)}`);
      }
    }
  });

  for (const [door, callOn] of Object.entries(DOORS)) {
    it(`refuse every admin method without the admin token over ${door}`, async () => {
      for (const { binding, method } of guarded(bindings, "admin")) {
        for (const [name, headers] of Object.entries(NO_ADMIN_TOKEN)) {
          assert.equal((await callOn(server, pathOf(binding, method), headers)).code, Code.Unauthenticated, `${method.name} with ${name}`);
        }
        // With the token the same call gets past the guard, whatever the method then answers.
        const admitted = await callOn(server, pathOf(binding, method), { authorization: `Bearer ${ADMIN_TOKEN}` });
        assert.ok(![Code.Unauthenticated, Code.PermissionDenied].includes(admitted.code), `${method.name} with the admin token: ${admitted.code}`);
      }
    });

    it(`mark every no-store method's answer, success or failure, over ${door}`, async () => {
      for (const { binding, method } of guarded(bindings, "noStore")) {
        const answer = await callOn(server, pathOf(binding, method), {});
        assert.equal(answer.headers["cache-control"], "no-store", `${method.name} (status ${answer.code})`);
      }
    });
  }

  it("refuse every admin method that has a REST path without the admin token over the REST facade", async () => {
    const admin = new Set(guarded(bindings, "admin").map(({ method }) => method));
    for (const [path, byMethod] of buildRouteTable(bindings)) {
      for (const [httpMethod, route] of byMethod) {
        if (!admin.has(route.method)) continue;
        for (const [name, headers] of Object.entries(NO_ADMIN_TOKEN)) {
          // A body the facade reads: JSON, as a client sends it (a body of another type is refused before any RPC runs).
          const json: Record<string, string> = route.body === "*" ? { "content-type": "application/json" } : {};
          const { res, body } = await h1call(server, path, { method: httpMethod, headers: { ...json, ...headers }, body: route.body === "*" ? "{}" : undefined });
          assert.equal(res.status, 401, `${httpMethod} ${path} with ${name}`);
          assert.equal(JSON.parse(body.toString()).error, "invalid_token");
        }
      }
    }
  });
});
