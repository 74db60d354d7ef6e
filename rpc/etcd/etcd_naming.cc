#include "rpc/etcd/etcd_naming.h"

#include <arpa/inet.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace h2rpc::etcd_internal {
namespace {

// The family of the numeric host of "host:port" or "[v6]:port": 4, 6, or 0
// for a host name (or a malformed endpoint).
int NumericFamily(absl::string_view endpoint) {
  char buffer[sizeof(in6_addr)];
  if (absl::StartsWith(endpoint, "[")) {
    const size_t close = endpoint.find("]:");
    if (close == absl::string_view::npos) return 0;
    const std::string host(endpoint.substr(1, close - 1));
    return inet_pton(AF_INET6, host.c_str(), buffer) == 1 ? 6 : 0;
  }
  const size_t colon = endpoint.find(':');
  if (colon == absl::string_view::npos) return 0;
  const std::string host(endpoint.substr(0, colon));
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ? 4 : 0;
}

}  // namespace

std::string EndpointPrefix(absl::string_view service) {
  return absl::StrCat(service, "/");
}

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) {
    end.pop_back();
  }
  if (end.empty()) return std::string(1, '\0');
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

std::string EndpointValue(absl::string_view address,
                          absl::string_view metadata_json) {
  nlohmann::json value = nlohmann::json::object();
  value["Op"] = 0;
  value["Addr"] = std::string(address);
  value["Metadata"] = metadata_json.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json::parse(metadata_json, nullptr,
                                                  /*allow_exceptions=*/false);
  if (value["Metadata"].is_discarded()) value["Metadata"] = nullptr;
  return value.dump();
}

bool ParseEndpointValue(absl::string_view value, std::string* address,
                        std::string* metadata_json) {
  const nlohmann::json parsed = nlohmann::json::parse(
      value.begin(), value.end(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return false;
  const auto addr = parsed.find("Addr");
  if (addr == parsed.end() || !addr->is_string() ||
      addr->get_ref<const std::string&>().empty()) {
    return false;
  }
  const auto op = parsed.find("Op");
  if (op != parsed.end() && !(op->is_number_integer() && *op == 0)) {
    return false;
  }
  *address = addr->get<std::string>();
  const auto metadata = parsed.find("Metadata");
  *metadata_json = metadata == parsed.end() || metadata->is_null()
                       ? std::string()
                       : metadata->dump();
  return true;
}

Status EtcdChannelTarget(absl::string_view endpoints, std::string* target) {
  const std::vector<absl::string_view> list = absl::StrSplit(endpoints, ',');
  for (absl::string_view endpoint : list) {
    if (endpoint.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    absl::StrCat("empty etcd endpoint in '", endpoints, "'"));
    }
  }
  if (list.size() == 1) {
    *target = absl::StrCat("dns:///", list[0]);
    return Status();
  }
  const int family = NumericFamily(list[0]);
  for (absl::string_view endpoint : list) {
    if (family == 0 || NumericFamily(endpoint) != family) {
      return Status(
          StatusCode::kInvalidArgument,
          absl::StrCat("several etcd endpoints must all be numeric "
                       "IP:PORT of one family (IPv6 in brackets); got '",
                       endpoints, "'"));
    }
  }
  *target =
      absl::StrCat(family == 4 ? "ipv4:" : "ipv6:", absl::StrJoin(list, ","));
  return Status();
}

}  // namespace h2rpc::etcd_internal
