import { Counter, type Registry } from "prom-client";

type Labels = Record<string, string>;

/** One label set's count. */
export interface CounterSeries {
  inc(): void;
}

/**
 * A Prometheus counter counted in plain numbers and handed to prom-client
 * only when scraped. prom-client's own `inc` validates and hashes the label
 * set on every call (~1 µs), and these counters move on every request.
 */
export class ScrapedCounter {
  private readonly series = new Map<string, { labels: Labels; uncollected: number }>();

  constructor(registry: Registry, name: string, help: string, private readonly labelNames: string[] = []) {
    const series = this.series;
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        // Zero counts too: a series is reported from its first mention on, so rates over it are defined.
        for (const s of series.values()) {
          this.inc(s.labels, s.uncollected);
          s.uncollected = 0;
        }
      },
    });
    // Like prom-client's own, a counter without labels reads 0 before its first count.
    if (labelNames.length === 0) this.entry({});
  }

  /** The series of `labels`, to keep and count on: the caller's own lookup then replaces this one's. */
  seriesOf(labels: Labels): CounterSeries {
    const counted = this.entry(labels);
    return { inc: () => void counted.uncollected++ };
  }

  inc(labels: Labels = {}): void {
    this.entry(labels).uncollected++;
  }

  private entry(labels: Labels): { labels: Labels; uncollected: number } {
    const key = this.labelNames.map((name) => labels[name] ?? "").join("\u0000");
    let s = this.series.get(key);
    if (!s) {
      s = { labels, uncollected: 0 };
      this.series.set(key, s);
    }
    return s;
  }
}
