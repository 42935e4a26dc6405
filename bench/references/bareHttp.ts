import http from "node:http";
import type { AddressInfo } from "node:net";

// The Node HTTP ceiling: read a form POST, answer ~300 bytes of JSON. No
// framework, no storage, no crypto: what any server on this machine pays.
const filler = {
  token_type: "Bearer",
  expires_in: 3600,
  scope: "openid profile email",
  iss: "http://localhost:8000",
  sub: "00000000-0000-4000-8000-000000000000",
  aud: ["bench-client"],
  jti: "11111111-1111-4111-8111-111111111111",
  client_id: "bench-client",
  username: "bench-user",
};

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
    const body = JSON.stringify({ active: form.has("token"), ...filler, iat: Math.floor(Date.now() / 1000) });
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), "cache-control": "no-store" });
    res.end(body);
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
