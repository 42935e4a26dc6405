// The parts of the untyped benchmark-only packages that the suite uses.

declare module "autocannon" {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }

  interface Options extends Request {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    overallRate?: number;
    pipelining?: number;
    timeout?: number;
    requests?: Request[];
  }

  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
  }

  export interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
    requests: Histogram;
    latency: Histogram;
    statusCodeStats: Record<string, { count: number }>;
  }

  export default function autocannon(options: Options): Promise<Result>;
}

declare module "oidc-provider" {
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => {
    callback(): import("node:http").RequestListener;
  };
  export default Provider;
}
