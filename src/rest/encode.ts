import { create, getOption, hasOption, toJson, type DescField, type DescMessage, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import { rest_json } from "../../gen/identity/v1/rest_pb.js";

const SIXTY_FOUR_BIT = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

/**
 * The spec's JSON: snake_case names, unset fields left out, and 64-bit
 * integers as JSON numbers (ProtoJSON would quote them; OAuth clients expect
 * `"expires_in": 3600`). A response message with the `(identity.v1.rest_json)`
 * option is written with JSON names and/or its default values instead, for
 * the whole message (proto/identity/v1/rest.proto).
 */
export function restJson<D extends DescMessage>(schema: D, init: MessageInitShape<D>): JsonValue {
  const style = hasOption(schema, rest_json) ? getOption(schema, rest_json) : undefined;
  const jsonNames = style?.jsonNames ?? false;
  const json = toJson(schema, create(schema, init), {
    useProtoFieldName: !jsonNames,
    alwaysEmitImplicit: style?.emitDefaults ?? false,
  });
  return numbersFor(schema, json, jsonNames ? (f) => f.jsonName : (f) => f.name);
}

function numbersFor(schema: DescMessage, json: JsonValue, key: (field: DescField) => string): JsonValue {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return json;
  for (const field of schema.fields) {
    const name = key(field);
    const value = json[name];
    if (value === undefined) continue;
    if (field.fieldKind === "scalar" && SIXTY_FOUR_BIT.has(field.scalar)) {
      json[name] = Number(value);
    } else if (field.fieldKind === "message") {
      json[name] = numbersFor(field.message, value, key);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      json[name] = value.map((item) => numbersFor(field.message, item, key));
    }
  }
  return json;
}
