import { create, fromJson, ScalarType, type DescMessage, type JsonObject, type Message, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { OAuthError } from "../oauth/errors.js";
import { REPEATABLE_PARAMS } from "../http/params.js";

/**
 * Fill a request message from parameters named by proto field name
 * (`client_id`) or JSON name (`accessToken`), not both. Unknown parameters
 * are ignored (RFC 6749 §3.1); a value of the wrong type is `invalid_request`.
 */
export function toMessage<D extends DescMessage>(schema: D, params: Map<string, string>): MessageShape<D> {
  const json: JsonObject = {};
  const strings: Record<string, string> = {};
  const lists: Record<string, string[]> = {};
  let onlyStrings = true;
  for (const field of schema.fields) {
    if (field.name !== field.jsonName && params.has(field.name) && params.has(field.jsonName)) {
      throw new OAuthError("invalid_request", `parameter ${field.name} is repeated (as ${field.jsonName})`);
    }
    const value = params.get(field.name) ?? params.get(field.jsonName);
    if (value !== undefined && field.fieldKind === "list" && field.listKind === "scalar" && field.scalar === ScalarType.STRING && REPEATABLE_PARAMS.has(field.name)) {
      // A repeatable parameter (http/params.ts) arrives joined by spaces.
      lists[field.localName] = value.split(" ").filter((v) => v.length > 0);
      continue;
    }
    if (value === undefined || field.fieldKind !== "scalar") continue;
    // A form, and JSON here, carry every value as text; the proto3 JSON mapping takes a bool only as a literal.
    json[field.jsonName] = field.scalar === ScalarType.BOOL && (value === "true" || value === "false") ? value === "true" : value;
    strings[field.localName] = value;
    onlyStrings &&= field.scalar === ScalarType.STRING;
  }
  // String fields take the parameters as they are; only other types need fromJson's conversion.
  if (onlyStrings) return create(schema, { ...strings, ...lists } as MessageInitShape<D>);
  try {
    return Object.assign(fromJson(schema, json, { ignoreUnknownFields: true }), lists);
  } catch {
    throw new OAuthError("invalid_request", "a parameter has a value of the wrong type");
  }
}

export function emptyMessage<D extends DescMessage>(schema: D): Message {
  return create(schema);
}
