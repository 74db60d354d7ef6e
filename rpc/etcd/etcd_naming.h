#ifndef H2RPC_RPC_ETCD_ETCD_NAMING_H_
#define H2RPC_RPC_ETCD_ETCD_NAMING_H_

#include <string>

#include "absl/strings/string_view.h"
#include "rpc/status.h"

namespace h2rpc::etcd_internal {

// The layout of etcd's naming/endpoints package (go.etcd.io/etcd/client/v3
// naming/endpoints), which the etcd resolver reads and the registrar
// writes, so that services registered by Go programs with etcd's library
// are found by h2rpc and the reverse: a service's endpoints are the keys
// "SERVICE/..." (by convention "SERVICE/ADDRESS"), each value the JSON
// object {"Op":0,"Addr":"host:port","Metadata":...} (Op 0 is Add). Pure
// functions; any thread.

// "SERVICE/": the prefix of the service's keys.
std::string EndpointPrefix(absl::string_view service);

// etcd's range_end for every key that starts with `prefix`: the prefix with
// its trailing 0xff bytes removed and its last byte incremented; "\0" (every
// key from `prefix` on) when nothing is left.
std::string PrefixEnd(absl::string_view prefix);

// The value for `address`, with `metadata_json` (JSON text; empty: null)
// as its Metadata.
std::string EndpointValue(absl::string_view address,
                          absl::string_view metadata_json);

// Reads a value: true with its Addr and its Metadata as compact JSON text
// ("" when null or absent). False when the value is not a JSON object
// whose Addr is a non-empty string, or its Op is not 0 (Add).
bool ParseEndpointValue(absl::string_view value, std::string* address,
                        std::string* metadata_json);

// The h2rpc channel target for etcd's client endpoints as an etcd:// target
// names them ("host:port" or "host:port,host:port,..."): "dns:///host:port"
// for one, "ipv4:a,b,..." or "ipv6:[a]:p,..." for several numeric ones of one
// family (tried in order). INVALID_ARGUMENT saying why otherwise.
Status EtcdChannelTarget(absl::string_view endpoints, std::string* target);

}  // namespace h2rpc::etcd_internal

#endif  // H2RPC_RPC_ETCD_ETCD_NAMING_H_
