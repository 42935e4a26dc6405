// The parts of the untyped benchmark-only packages that the bench uses.

declare module "autocannon" {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request is sent; its answer is the request sent. */
    setupRequest?: (request: any) => any;
  }

  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    pipelining?: number;
    requests?: Request[];
  }

  export interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
    latency: { p99: number };
  }

  export default function autocannon(options: Options): Promise<Result>;
}

declare module "oidc-provider" {
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => {
    callback(): import("node:http").RequestListener;
  };
  export default Provider;
}
