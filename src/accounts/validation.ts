import { OAuthError } from "../oauth/errors.js";
import { ConflictError } from "../store/errors.js";

/** One bad field: its input (and the contract's JSON) name, and what is wrong without the name. */
export interface FieldProblem {
  field: string;
  problem: string;
}

/**
 * Bad admin input (config file, CLI or admin RPC), naming the field; or
 * several fields (`more`), so a form can show an error under each. The first
 * is `field` and `problem`; the description names them all.
 */
export class InvalidInputError extends OAuthError {
  /** Every bad field, in the order they were checked. */
  readonly problems: readonly FieldProblem[];

  constructor(readonly field: string, readonly problem: string, more: readonly FieldProblem[] = []) {
    super("invalid_request", [{ field, problem }, ...more].map((p) => `${p.field}: ${p.problem}`).join("; "));
    this.problems = [{ field, problem }, ...more];
  }
}

/**
 * Runs the checks of one input's fields and refuses them together: each
 * check that refuses its field is noted and the next runs, and done() throws
 * one InvalidInputError naming every bad field.
 */
export class FieldChecks {
  private readonly problems: FieldProblem[] = [];

  /** The check's value; undefined when it refused, its problems noted. Any other error goes up at once. */
  check<T>(run: () => T): T | undefined {
    try {
      return run();
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      this.problems.push(...err.problems);
      return undefined;
    }
  }

  /** Notes a problem found without a check. */
  refuse(field: string, problem: string): void {
    this.problems.push({ field, problem });
  }

  /** Whether a check already refused this field (a later check of it would only repeat that). */
  refused(field: string): boolean {
    return this.problems.some((p) => p.field === field);
  }

  /** Throws every problem noted, as one error. */
  done(): void {
    const [first, ...more] = this.problems;
    if (first) throw new InvalidInputError(first.field, first.problem, more);
  }
}

export function requireName(value: unknown, field = "name"): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9_.@-]{1,100}$/.test(value)) {
    throw new InvalidInputError(field, "must be 1-100 letters, digits or _ . @ -");
  }
  return value;
}

export function optionalString(value: unknown, field: string, max = 1000): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length > max) throw new InvalidInputError(field, `must be a string of at most ${max} characters`);
  return value;
}

export function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new InvalidInputError(field, "must be true or false");
  return value;
}

export function optionalHours(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 24 * 365 * 10) {
    throw new InvalidInputError(field, "must be a whole number of hours between 0 and 87600");
  }
  return value;
}

export function optionalStringList(value: unknown, field: string, check?: (item: string) => string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) throw new InvalidInputError(field, "must be a list of strings");
  for (const item of value as string[]) {
    const problem = check?.(item);
    if (problem) throw new InvalidInputError(field, `${JSON.stringify(item.slice(0, 100))} ${problem}`);
  }
  return [...new Set(value as string[])];
}

/** An absolute http(s) URL without a fragment (RFC 6749 §3.1.2). */
export function absoluteHttpUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https";
  if (url.hash || value.includes("#")) return "must not have a fragment";
  return undefined;
}

/**
 * A web origin as a browser sends it in the Origin header (RFC 6454 §6.1):
 * http(s)://host[:port], lowercase, no default port, path, query, fragment or
 * credentials. Compared character for character with that header, so any
 * other spelling of it would never match and is refused here.
 */
export function originProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an origin (scheme://host[:port])";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https";
  if (url.origin !== value) return `is not an origin as browsers send it (scheme://host[:port], no path): ${url.origin}`;
  return undefined;
}

/** Reject fields a caller sent that we do not know, so typos do not pass silently. */
export function rejectUnknownFields(input: Record<string, unknown>, known: readonly string[]): void {
  const [first, ...more] = Object.keys(input)
    .filter((k) => !known.includes(k))
    .map((field) => ({ field, problem: "is not a known field" }));
  if (first) throw new InvalidInputError(first.field, first.problem, more);
}

/** Run a write, turning a uniqueness conflict into `already_exists`. */
export async function conflictsAsErrors(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (err instanceof ConflictError) throw new OAuthError("already_exists", err.message);
    throw err;
  }
}
