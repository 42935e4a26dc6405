import { collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Metrics } from "../oauth/metrics.js";
import { ScrapedCounter, type CounterSeries } from "./scrapedCounter.js";

/** One finished HTTP request, as the request chain saw it. */
export interface RequestObservation {
  /** A bounded label: a known path, `connect:<service>/<method>`, or `other`. */
  route: string;
  method: string;
  status: number;
  /** The gRPC status of gRPC and gRPC-Web responses, "" otherwise. */
  grpcStatus: string;
  seconds: number;
}

/** The database pool's load, read at each scrape. */
export interface PoolStats {
  inUse: number;
  pendingAcquires: number;
}

// Process metrics describe the process, not a server in it: collected once.
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** The domain's events, HTTP requests and the database pool as Prometheus metrics. */
export class PromMetrics implements Metrics {
  private readonly registry = new Registry();
  private readonly exposition: Registry;
  private readonly counter = (name: string, help: string, labelNames: string[] = []) =>
    new ScrapedCounter(this.registry, name, help, labelNames);

  private readonly requests = this.counter("identity_http_requests_total", "HTTP requests by route, method and status", [
    "route",
    "method",
    "status",
    "grpc_status",
  ]);
  private readonly latency = new Histogram({
    name: "identity_http_request_duration_seconds",
    help: "HTTP request duration, from the request line to the end of the response",
    labelNames: ["route", "method"],
    registers: [this.registry],
  });
  /**
   * Each request's two series, looked up by one string: prom-client's
   * `labels()` would otherwise validate the latency's label set and make a
   * child on every request (the child's `observe` still hashes it). Every
   * label is bounded (routeNamer, METHODS, our own statuses), so this map is
   * too.
   */
  private readonly requestSeries = new Map<string, { count: CounterSeries; latency: { observe(seconds: number): void } }>();
  private readonly issued = this.counter("identity_tokens_issued_total", "token responses issued, by grant type", ["grant_type"]);
  private readonly introspections = this.counter("identity_introspections_total", "token introspections, by result", ["result"]);
  private readonly reuse = this.counter("identity_refresh_token_reuse_total", "refresh tokens presented again after use");
  private readonly familyRevocations = this.counter("identity_token_family_revocations_total", "token families revoked as a whole");
  private readonly loginFailures = this.counter("identity_login_failures_total", "failed user sign-ins");
  private readonly lockouts = this.counter("identity_login_lockouts_total", "accounts locked after repeated failures");
  private readonly passwordChecks = this.counter("identity_password_checks_total", "user passwords checked against their hash (scrypt runs)");
  private readonly upstream = this.counter("identity_federation_upstream_calls_total", "calls to federation providers", [
    "provider",
    "outcome",
  ]);

  constructor(pool: () => PoolStats) {
    new Gauge({
      name: "identity_db_pool_connections_in_use",
      help: "database connections lent out by the pool",
      registers: [this.registry],
      collect() {
        this.set(pool().inUse);
      },
    });
    new Gauge({
      name: "identity_db_pool_pending_acquires",
      help: "queries waiting for a database connection",
      registers: [this.registry],
      collect() {
        this.set(pool().pendingAcquires);
      },
    });
    // Both results exist from the start, so rates over them are defined.
    this.introspections.seriesOf({ result: "active" });
    this.introspections.seriesOf({ result: "inactive" });
    this.exposition = Registry.merge([processMetrics(), this.registry]);
  }

  tokensIssued(grantType: string): void {
    this.issued.inc({ grant_type: grantType });
  }
  introspected(active: boolean): void {
    this.introspections.inc({ result: active ? "active" : "inactive" });
  }
  refreshReuse(): void {
    this.reuse.inc();
  }
  familyRevoked(): void {
    this.familyRevocations.inc();
  }
  loginFailure(): void {
    this.loginFailures.inc();
  }
  lockout(): void {
    this.lockouts.inc();
  }
  passwordChecked(): void {
    this.passwordChecks.inc();
  }
  upstreamCall(provider: string, outcome: string): void {
    this.upstream.inc({ provider, outcome });
  }

  observeRequest(r: RequestObservation): void {
    const key = `${r.route} ${r.method} ${r.status} ${r.grpcStatus}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      series = {
        count: this.requests.seriesOf({ route: r.route, method: r.method, status: String(r.status), grpc_status: r.grpcStatus }),
        latency: this.latency.labels({ route: r.route, method: r.method }),
      };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.latency.observe(r.seconds);
  }

  private renderer?: () => Promise<{ contentType: string; body: string }>;

  /** What a scrape reads: prom-client's cluster aggregation reads it in each worker (serve --workers). */
  get scrapeRegistry(): Registry {
    return this.exposition;
  }

  /** Scrapes answer with `render` instead: the sum over every worker of a cluster. */
  renderBy(render: () => Promise<{ contentType: string; body: string }>): void {
    this.renderer = render;
  }

  /** The text exposition format. */
  async render(): Promise<{ contentType: string; body: string }> {
    if (this.renderer) return this.renderer();
    return { contentType: this.exposition.contentType, body: await this.exposition.metrics() };
  }
}
