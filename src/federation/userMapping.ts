import { USER_MAPPING_KEYS, type UserMapping, type UserMappingKey } from "../shared/model.js";
import { MAX_EXTERNAL_ID_LENGTH, MappingError, type UpstreamProfile } from "./upstream.js";

/** The spec's UserInfo fields. `id` has no default path: see `mapProfile`. */
export const DEFAULT_USER_MAPPING: UserMapping = {
  username: "preferred_username",
  displayName: "name",
  email: "email",
  avatarUrl: "picture",
};

/** A mapping value: a JSON path of names and array indexes joined by dots (`data.user.email`, `emails.0.value`). */
export function mappingPathProblem(path: string): string | undefined {
  if (path.length === 0 || path.length > 200) return "must be a path of 1-200 characters";
  if (path.split(".").some((part) => part === "")) return "must be names or indexes joined by dots";
  return undefined;
}

/** The value at `path` in `body`, or undefined when any step is missing. */
export function valueAt(body: unknown, path: string): unknown {
  let here: unknown = body;
  for (const part of path.split(".")) {
    if (Array.isArray(here)) {
      if (!/^\d+$/.test(part)) return undefined;
      here = here[Number(part)];
    } else if (typeof here === "object" && here !== null && Object.hasOwn(here, part)) {
      here = (here as Record<string, unknown>)[part];
    } else {
      return undefined;
    }
  }
  return here;
}

/** A string, or a number as a string; undefined for anything else (null included). */
function text(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * The profile in a UserInfo answer, read through the provider's mapping over
 * the type's defaults. Only the id is required: missing, empty or of another
 * type than string or number, it fails with a MappingError naming the field.
 * The other fields are empty (username: undefined) when missing or unusable.
 *
 * Without an `id` path, the id is `sub` when the answer has one, else
 * `preferred_username` (kept apart by `idType`), as before mappings existed,
 * so that existing links keep their key.
 */
export function mapProfile(body: Record<string, unknown>, mapping: UserMapping, defaults: UserMapping = DEFAULT_USER_MAPPING): UpstreamProfile {
  const paths: UserMapping = { ...defaults };
  for (const key of USER_MAPPING_KEYS) if (mapping[key]) paths[key] = mapping[key];
  const read = (key: UserMappingKey): string | undefined => (paths[key] ? text(valueAt(body, paths[key])) : undefined);

  let id: string | undefined;
  let idType: UpstreamProfile["idType"] = "sub";
  if (paths.id) {
    const value = valueAt(body, paths.id);
    id = text(value);
    if (value === undefined || value === null || id === "") throw new MappingError("id", paths.id, "is missing");
    if (id === undefined) throw new MappingError("id", paths.id, "is neither a string nor a number");
  } else {
    const sub = text(body.sub);
    if (sub) {
      id = sub;
    } else {
      id = read("username") || undefined;
      idType = "preferred_username";
      if (!id) throw new MappingError("id", `sub or ${paths.username ?? "preferred_username"}`, "is missing");
    }
  }
  if (id.length > MAX_EXTERNAL_ID_LENGTH) throw new MappingError("id", paths.id ?? idType, `is longer than ${MAX_EXTERNAL_ID_LENGTH} characters`);

  const profile: UpstreamProfile = {
    id,
    idType,
    username: read("username") || undefined,
    displayName: read("displayName") ?? "",
    email: read("email") ?? "",
    avatarUrl: read("avatarUrl") ?? "",
    phone: read("phone") ?? "",
  };
  if (typeof body.email_verified === "boolean") profile.emailVerified = body.email_verified;
  return profile;
}
