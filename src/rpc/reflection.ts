// gRPC server reflection (grpc.reflection.v1) for Connect services.
//
// Connect has no reflection package, so this answers the bidi
// ServerReflectionInfo stream from the file descriptors that protoc-gen-es
// embeds in the generated code. Tools such as grpcurl, grpcui and Postman use
// it to discover services without a local copy of the .proto files.

import {
  createRegistry,
  toBinary,
  type DescFile,
  type DescService,
  type MessageInitShape,
  type Registry,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection,
  type ServerReflectionRequest,
  type ServerReflectionResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";

type ResponseBody = MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"];

// The reflection protocol carries gRPC status codes as plain integers.
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const INTERNAL = 13;

/** Everything reflection can answer about, built once per server. */
interface ReflectionIndex {
  serviceNames: string[];
  files: Map<string, DescFile>;
  types: Registry;
}

export function reflectionService(services: DescService[]): ServiceImpl<typeof ServerReflection> {
  const index = buildIndex(services);
  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answerSafely(index, request),
        };
      }
    },
  };
}

function buildIndex(services: DescService[]): ReflectionIndex {
  // Reflection advertises itself too, so clients can describe it like any other service.
  const all = [...services, ServerReflection];
  const files = collectFiles(all.map((s) => s.file));
  return {
    serviceNames: [...new Set(all.map((s) => s.typeName))],
    files,
    types: createRegistry(...files.values()),
  };
}

/** Files keyed by proto path ("identity/v1/token.proto"), imports included, so any file a client is sent can also be fetched by name. */
function collectFiles(roots: DescFile[]): Map<string, DescFile> {
  const files = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    file.dependencies.forEach(visit);
  };
  roots.forEach(visit);
  return files;
}

// One bad request must not tear down a stream that a tool keeps open for the whole session.
function answerSafely(index: ReflectionIndex, request: ServerReflectionRequest): ResponseBody {
  try {
    return answer(index, request);
  } catch (err) {
    return errorBody(INTERNAL, `reflection failed: ${String(err)}`);
  }
}

function answer(index: ReflectionIndex, request: ServerReflectionRequest): ResponseBody {
  const { messageRequest: req } = request;
  switch (req.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return fileBody(index.files.get(req.value), `file not found: ${req.value}`);
    case "fileContainingSymbol":
      return fileBody(findSymbolFile(index.types, req.value), `symbol not found: ${req.value}`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = req.value;
      return fileBody(
        findExtensionFile(index.types, containingType, extensionNumber),
        `extension ${extensionNumber} of ${containingType} not found`,
      );
    }
    case "allExtensionNumbersOfType":
      return extensionNumbersBody(index.types, req.value);
    default:
      return errorBody(INVALID_ARGUMENT, "message_request is not set");
  }
}

/** Resolves any fully-qualified name a client may ask about to the file declaring it. */
function findSymbolFile(types: Registry, symbol: string): DescFile | undefined {
  const type = types.get(symbol);
  if (type) return type.file;
  // Methods, fields and oneofs are not registry entries: look them up on their parent.
  const dot = symbol.lastIndexOf(".");
  const parent = types.get(symbol.slice(0, dot));
  const member = symbol.slice(dot + 1);
  switch (parent?.kind) {
    case "service":
      return parent.methods.some((m) => m.name === member) ? parent.file : undefined;
    case "message": {
      const declared = [...parent.fields, ...parent.oneofs].some((f) => f.name === member);
      return declared ? parent.file : undefined;
    }
    default:
      return undefined;
  }
}

function findExtensionFile(types: Registry, extendee: string, number: number): DescFile | undefined {
  const message = types.getMessage(extendee);
  return message && types.getExtensionFor(message, number)?.file;
}

// Like grpc-go: an unknown type is NOT_FOUND, a known type without extensions is an empty list.
function extensionNumbersBody(types: Registry, typeName: string): ResponseBody {
  if (!types.getMessage(typeName)) {
    return errorBody(NOT_FOUND, `type not found: ${typeName}`);
  }
  const numbers: number[] = [];
  for (const type of types) {
    if (type.kind === "extension" && type.extendee.typeName === typeName) numbers.push(type.number);
  }
  return {
    case: "allExtensionNumbersResponse",
    value: { baseTypeName: typeName, extensionNumber: numbers.sort((a, b) => a - b) },
  };
}

// Clients build a descriptor pool from the answer alone, so it must carry every
// transitive import; the requested file goes first, as in grpc-go.
function fileBody(file: DescFile | undefined, notFound: string): ResponseBody {
  if (!file) return errorBody(NOT_FOUND, notFound);
  const closure = collectFiles([file]).values();
  return {
    case: "fileDescriptorResponse",
    value: { fileDescriptorProto: [...closure].map((f) => toBinary(FileDescriptorProtoSchema, f.proto)) },
  };
}

function errorBody(errorCode: number, errorMessage: string): ResponseBody {
  return { case: "errorResponse", value: { errorCode, errorMessage } };
}
