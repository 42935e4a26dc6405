import { create, toJson, type DescMessage, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";

const SIXTY_FOUR_BIT = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

/**
 * The spec's JSON: snake_case names, unset fields left out, and 64-bit
 * integers as JSON numbers (ProtoJSON would quote them; OAuth clients expect
 * `"expires_in": 3600`).
 */
export function restJson<D extends DescMessage>(schema: D, init: MessageInitShape<D>): JsonValue {
  const json = toJson(schema, create(schema, init), { useProtoFieldName: true });
  return numbersFor(schema, json);
}

function numbersFor(schema: DescMessage, json: JsonValue): JsonValue {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return json;
  for (const field of schema.fields) {
    const value = json[field.name];
    if (value === undefined) continue;
    if (field.fieldKind === "scalar" && SIXTY_FOUR_BIT.has(field.scalar)) {
      json[field.name] = Number(value);
    } else if (field.fieldKind === "message") {
      json[field.name] = numbersFor(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      json[field.name] = value.map((item) => numbersFor(field.message, item));
    }
  }
  return json;
}
