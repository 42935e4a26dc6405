import net from "node:net";

/**
 * A TCP relay to PostgreSQL that the test can freeze (a network partition:
 * nothing gets through either way, no connection is refused or reset),
 * thaw, stop (connections dropped and refused) and start again.
 */
export class Relay {
  private server: net.Server | undefined;
  private readonly pairs = new Set<{ inbound: net.Socket; outbound?: net.Socket }>();
  private frozen = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((inbound) => {
      const pair: { inbound: net.Socket; outbound?: net.Socket } = { inbound };
      this.pairs.add(pair);
      inbound.on("error", () => {});
      inbound.once("close", () => {
        pair.outbound?.destroy();
        this.pairs.delete(pair);
      });
      // A new connection during a partition: its SYN gets nowhere until the network is back.
      if (this.frozen) inbound.pause();
      else this.connect(pair);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Nothing passes any more, in either direction; every socket stays open. */
  freeze(): void {
    this.frozen = true;
    for (const { inbound, outbound } of this.pairs) {
      inbound.pause();
      outbound?.pause();
    }
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) {
      if (pair.inbound.destroyed) continue;
      if (!pair.outbound) this.connect(pair);
      pair.inbound.resume();
      pair.outbound!.resume();
    }
  }

  /** Drop every connection and refuse new ones. */
  async stop(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const { inbound, outbound } of this.pairs) {
      inbound.destroy();
      outbound?.destroy();
    }
    await closed;
  }

  private connect(pair: { inbound: net.Socket; outbound?: net.Socket }): void {
    const { inbound } = pair;
    const outbound = (pair.outbound = net.connect(this.target));
    outbound.on("error", () => {});
    outbound.once("close", () => inbound.destroy());
    // By hand rather than pipe(): a paused socket must stay paused.
    inbound.on("data", (chunk) => outbound.write(chunk));
    outbound.on("data", (chunk) => inbound.write(chunk));
  }
}
