// Loads grpc.testing.TestService from a protoc FileDescriptorSet at runtime
// (no generated code). Build the set with:
//   protoc -I WORKSPACE_ROOT --include_imports \
//     --descriptor_set_out=testing.binpb proto/grpc/testing/test.proto
import { readFileSync } from "node:fs";
import { fromBinary, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

export function loadTestService(path) {
  const set = fromBinary(FileDescriptorSetSchema, readFileSync(path));
  const registry = createFileRegistry(set);
  const service = registry.getService("grpc.testing.TestService");
  if (!service) throw new Error(`grpc.testing.TestService not in ${path}`);
  return { registry, service };
}

// Tiny --key=value flag parser; bare --key means "true".
export function parseFlags(argv) {
  const flags = {};
  for (const a of argv) {
    const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`bad argument: ${a}`);
    flags[m[1]] = m[2] ?? "true";
  }
  return flags;
}
