#ifndef H2RPC_RPC_AUTH_CONTEXT_H_
#define H2RPC_RPC_AUTH_CONTEXT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "rpc/metadata.h"
#include "rpc/peer_identity.h"
#include "rpc/status.h"

namespace h2rpc {

// What a server knows about who is calling (gRPC C++'s AuthContext): named
// properties, each name with any number of values in order, and which of
// the names holds the caller's identity. The transport's properties, with
// gRPC's names:
//   transport_security_type       "ssl" over TLS, "insecure" otherwise
//   security_level                "TSI_PRIVACY_AND_INTEGRITY" over TLS,
//                                 "TSI_SECURITY_NONE" otherwise
//   ssl_session_reused            over TLS: "true" when the connection
//                                 resumed a session, else "false"
//   x509_subject                  the peer certificate's subject (RFC 2253)
//   x509_common_name              its common name
//   x509_subject_alternative_name every subject alternative name, in
//                                 certificate order within each kind: DNS
//                                 names, URIs, IP addresses, emails
//   peer_dns, peer_uri, peer_ip, peer_email   the same names by kind
// The certificate's properties are present when the peer presented one.
// The identity is the x509_subject_alternative_name values when there are
// any, else x509_common_name, and only when the certificate was verified
// (PeerIdentity::certificate_verified); an AuthMetadataProcessor may add
// properties and name another identity.
//
// ServerContext::auth_context() builds it on first use (nothing is built
// for calls that never ask); its processor writes it before the handler
// runs, the handler reads it. Not thread-safe.
class AuthContext {
 public:
  static constexpr char kTransportSecurityType[] = "transport_security_type";
  static constexpr char kSecurityLevel[] = "security_level";
  static constexpr char kSslSessionReused[] = "ssl_session_reused";
  static constexpr char kX509Subject[] = "x509_subject";
  static constexpr char kX509CommonName[] = "x509_common_name";
  static constexpr char kX509SubjectAlternativeName[] =
      "x509_subject_alternative_name";
  static constexpr char kPeerDns[] = "peer_dns";
  static constexpr char kPeerUri[] = "peer_uri";
  static constexpr char kPeerIp[] = "peer_ip";
  static constexpr char kPeerEmail[] = "peer_email";

  // The transport's properties for a connection with `identity` (null:
  // plaintext).
  explicit AuthContext(const PeerIdentity* identity);

  // Whether an identity is named (gRPC's IsPeerAuthenticated).
  bool IsPeerAuthenticated() const { return !identity_property_.empty(); }
  // The identity's values; empty when not authenticated.
  std::vector<absl::string_view> GetPeerIdentity() const {
    return FindPropertyValues(identity_property_);
  }
  const std::string& GetPeerIdentityPropertyName() const {
    return identity_property_;
  }
  // The values of property `name`, in the order they were added.
  std::vector<absl::string_view> FindPropertyValues(
      absl::string_view name) const;
  // Every property (name, value), in the order added.
  const std::vector<std::pair<std::string, std::string>>& properties() const {
    return properties_;
  }

  void AddProperty(absl::string_view name, absl::string_view value) {
    properties_.emplace_back(std::string(name), std::string(value));
  }
  // Names the identity property; false (nothing changes) when no property
  // of that name exists.
  bool SetPeerIdentityPropertyName(absl::string_view name);

 private:
  std::vector<std::pair<std::string, std::string>> properties_;
  std::string identity_property_;
};

// A server's decision on each call's credentials before the call reaches
// its interceptors and handler (gRPC C++'s AuthMetadataProcessor, set on
// ServerOptions::auth_metadata_processor for every port). Shared by every
// call: Process runs on many threads at once and must be thread-safe.
class AuthMetadataProcessor {
 public:
  virtual ~AuthMetadataProcessor() = default;

  // True (the default): Process may block (it asks another service, say),
  // so it runs on one of the server's synchronous handler threads
  // (ServerOptions::max_sync_threads; a call that finds them all busy fails
  // with RESOURCE_EXHAUSTED, as a synchronous handler would) and the call
  // waits for it, at most ServerOptions::auth_processor_timeout (then it
  // fails with UNAVAILABLE, and the late decision is dropped) or until its
  // deadline or cancellation. False: Process never blocks and runs on the
  // connection's event loop as the call arrives.
  virtual bool IsBlocking() const { return true; }

  // Decides on the call of `method` ("/package.Service/Method") whose
  // client sent `metadata`: OK lets it through; any other status fails the
  // call with it before its handler runs (UNAUTHENTICATED for missing or
  // bad credentials, PERMISSION_DENIED for a caller not allowed, as
  // gRPC's processors answer). May add properties to `context` and name
  // its identity. `response_metadata` goes out with the response headers
  // of an accepted call, with the trailers of a refused one.
  virtual Status Process(absl::string_view method, const Metadata& metadata,
                         AuthContext* context, Metadata* response_metadata) = 0;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_AUTH_CONTEXT_H_
