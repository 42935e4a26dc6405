import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as OTLP/JSON carries it (ids in hex). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
}

export interface Received {
  spans: OtlpSpan[];
  resources: { key: string; value: Record<string, unknown> }[][];
}

/** A local OTLP/HTTP receiver (test/e2e/traces.spec.ts, test/app/tracing.spec.ts) that keeps what is posted to /v1/traces as JSON. */
export async function startReceiver(): Promise<{ server: Server; url: string; received: Received; bodies: string[] }> {
  const received: Received = { spans: [], resources: [] };
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      if (req.method === "POST" && req.url === "/v1/traces" && /json/.test(req.headers["content-type"] ?? "")) {
        bodies.push(body);
        const parsed = JSON.parse(body) as {
          resourceSpans?: { resource?: { attributes?: Received["resources"][number] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
        };
        for (const rs of parsed.resourceSpans ?? []) {
          received.resources.push(rs.resource?.attributes ?? []);
          for (const ss of rs.scopeSpans ?? []) received.spans.push(...(ss.spans ?? []));
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, bodies };
}

export const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

