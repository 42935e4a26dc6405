/**
 * The server of the soak test, in a process of its own (so its heap is its
 * own), started by bench/soak.ts with --expose-gc. It answers `heap` messages
 * with its heap after a full collection.
 */
import { silentLogger } from "../src/shared/log.js";
import { startServer } from "../src/app/server.js";
import { writeConfigFile } from "../test/support/server.js";
import { SOAK_APP, SOAK_USER } from "./soakLoad.js";

const database = process.argv[2]!;
const server = await startServer(
  {
    port: 0,
    host: "127.0.0.1",
    database,
    configFile: writeConfigFile({ applications: [SOAK_APP], users: [SOAK_USER] }),
    maxBodyBytes: 65536,
    // One address makes all the load: the per-address lockout must not see it as an attack (it makes no failures anyway).
    loginMaxFailuresPerIp: 0,
  },
  { logger: silentLogger },
);

const gc = (globalThis as { gc?: () => void }).gc;
process.on("message", (message: unknown) => {
  if (message !== "heap") return;
  gc?.();
  gc?.();
  process.send!({ heapUsed: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss });
});
process.on("disconnect", () => void server.close().then(() => process.exit(0)));
process.send!({ url: server.url });
