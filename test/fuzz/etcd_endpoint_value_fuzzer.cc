// Fuzzes the parser of the endpoint values the etcd resolver reads from
// etcd (written by any registrar, Go programs included). Invariants:
//  * ParseEndpointValue never crashes; what it accepts has a non-empty
//    address, and its Metadata (when set) is JSON text.
//  * Written back with EndpointValue, an accepted value parses again to the
//    same address and Metadata.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "rpc/etcd/etcd_naming.h"

namespace {

using h2rpc::etcd_internal::EndpointValue;
using h2rpc::etcd_internal::ParseEndpointValue;

void Check(bool condition) {
  if (!condition) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  std::string address, metadata;
  if (!ParseEndpointValue(input, &address, &metadata)) return 0;
  Check(!address.empty());
  std::string address_again, metadata_again;
  Check(ParseEndpointValue(EndpointValue(address, metadata), &address_again,
                           &metadata_again));
  Check(address_again == address && metadata_again == metadata);
  return 0;
}
