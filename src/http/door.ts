import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * What a front door says of a request: `false` when the path is not one of
 * its own, `true` when it has answered already, or the promise of its
 * answer. A door answers its own failures, so a rejection is a fault of ours.
 * Synchronous on purpose: every request asks the doors in turn, and an
 * `await` per door cost a microtask each.
 */
export type DoorAnswer = boolean | Promise<void>;

export type Door = (req: IncomingMessage, res: ServerResponse, url: URL) => DoorAnswer;

/** Hand-written paths that share one label, e.g. `/login/oauth/provider/{name}`. */
export interface PathPattern {
  pattern: RegExp;
  label: string;
}
