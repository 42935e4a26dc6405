import { parseArgs } from "node:util";
import { parseResourceInput } from "./../accounts/resources.js";
import type { Domain } from "./../domain/index.js";
import { OAuthError } from "./../oauth/errors.js";
import type { ResourceRecord } from "./../shared/model.js";

/** `identity resource`'s flags besides --database: `--scope NAME=DESCRIPTION` repeats. */
export const RESOURCE_FLAGS = {
  database: { type: "string" },
  uri: { type: "string" },
  name: { type: "string" },
  scope: { type: "string", multiple: true },
  // Update only: drop every scope (no --scope given means keep them).
  "no-scopes": { type: "boolean" },
} as const;

export const RESOURCE_HELP = {
  verbs: [
    ["create --uri URI --name NAME [--scope NAME=DESCRIPTION]...", "register a resource server (RFC 8707): tokens for it carry URI as aud"],
    ["list", "list the resource servers"],
    ["show --uri URI", "show one resource server"],
    ["update --uri URI [--name NAME] [--scope NAME=DESCRIPTION]... [--no-scopes]", "change the name, or replace the scopes"],
    ["delete --uri URI", "delete a resource server"],
  ] as [string, string][],
  flags: ["uri", "name", "scope", "no-scopes"],
};

const seconds = (ms: number) => Math.floor(ms / 1000);
const shown = ({ createdAt, updatedAt, ...rest }: ResourceRecord) => ({ ...rest, createdTime: seconds(createdAt), updatedTime: seconds(updatedAt) });

/** `--scope mcp:tools=Call the tools`: the name, then the one-line description after the first `=`. */
function scopeFlag(value: string): { name: string; description: string } {
  const at = value.indexOf("=");
  return at < 0 ? { name: value, description: "" } : { name: value.slice(0, at), description: value.slice(at + 1) };
}

/** The flags of `identity resource <verb>`, parsed; --database is the caller's. */
export function resourceArgs(args: string[]) {
  return parseArgs({ args, options: RESOURCE_FLAGS, strict: true, allowPositionals: false }).values;
}

/** Runs one `identity resource` verb and returns what to print. */
export async function runResource(domain: Domain, verb: string | undefined, values: ReturnType<typeof resourceArgs>): Promise<unknown> {
  const uri = () => {
    if (!values.uri) throw new OAuthError("invalid_request", "--uri is required");
    return values.uri;
  };
  const input = () => {
    if (values.scope && values["no-scopes"]) throw new OAuthError("invalid_request", "--scope and --no-scopes contradict each other");
    const scopes = values["no-scopes"] ? [] : values.scope?.map(scopeFlag);
    return parseResourceInput({ uri: values.uri, ...(values.name !== undefined ? { name: values.name } : {}), ...(scopes ? { scopes } : {}) });
  };
  switch (verb) {
    case "create":
      return shown(await domain.resourceAdmin.create(input()));
    case "update":
      return shown(await domain.resourceAdmin.update(input()));
    case "list":
      return (await domain.resourceAdmin.list()).map(shown);
    case "show":
      return shown(await domain.resourceAdmin.get(uri()));
    case "delete":
      await domain.resourceAdmin.delete(uri());
      return { deleted: uri() };
    default:
      throw new OAuthError("invalid_request", `unknown command: ${`resource ${verb ?? ""}`.trim()} (see identity resource --help)`);
  }
}
