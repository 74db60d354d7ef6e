#ifndef H2RPC_BASE_PEER_IDENTITY_H_
#define H2RPC_BASE_PEER_IDENTITY_H_

#include <string>
#include <vector>

namespace h2rpc {

// What a secure connection (TLS) established about its peer, fixed once the
// handshake is done. A plaintext connection has none (a null pointer where
// one is offered). Plain data: any thread may read it; it never changes.
struct PeerIdentity {
  // The negotiated protocol version, e.g. "TLSv1.3".
  std::string protocol;
  // The handshake resumed an earlier session (a session ticket) instead of
  // a full handshake; the certificate fields are the earlier handshake's.
  bool session_reused = false;
  // The peer's certificate chain verified against our trusted roots. False
  // when the peer sent no certificate, or when a server was configured to
  // request client certificates without verifying them.
  bool certificate_verified = false;
  // The subject of the peer's leaf certificate in RFC 2253 form
  // ("CN=client,O=Example"); empty when the peer sent no certificate.
  std::string subject;
  // The leaf certificate's subject common name; empty if it has none.
  std::string common_name;
  // Its subjectAltName entries by kind, in certificate order.
  std::vector<std::string> dns_names;
  std::vector<std::string> uris;
  std::vector<std::string> ip_addresses;  // "127.0.0.1", "::1"
  std::vector<std::string> emails;
};

}  // namespace h2rpc

#endif  // H2RPC_BASE_PEER_IDENTITY_H_
