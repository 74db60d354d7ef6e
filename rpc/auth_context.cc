#include "rpc/auth_context.h"

namespace h2rpc {

AuthContext::AuthContext(const PeerIdentity* identity) {
  if (identity == nullptr) {
    AddProperty(kTransportSecurityType, "insecure");
    AddProperty(kSecurityLevel, "TSI_SECURITY_NONE");
    return;
  }
  AddProperty(kTransportSecurityType, "ssl");
  AddProperty(kSecurityLevel, "TSI_PRIVACY_AND_INTEGRITY");
  AddProperty(kSslSessionReused, identity->session_reused ? "true" : "false");
  if (!identity->subject.empty()) {
    AddProperty(kX509Subject, identity->subject);
  }
  if (!identity->common_name.empty()) {
    AddProperty(kX509CommonName, identity->common_name);
  }
  const std::pair<const std::vector<std::string>*, const char*> kinds[] = {
      {&identity->dns_names, kPeerDns},
      {&identity->uris, kPeerUri},
      {&identity->ip_addresses, kPeerIp},
      {&identity->emails, kPeerEmail},
  };
  bool has_san = false;
  for (const auto& [names, property] : kinds) {
    for (const std::string& name : *names) {
      AddProperty(kX509SubjectAlternativeName, name);
      has_san = true;
    }
  }
  for (const auto& [names, property] : kinds) {
    for (const std::string& name : *names) AddProperty(property, name);
  }
  if (!identity->certificate_verified) return;
  if (has_san) {
    identity_property_ = kX509SubjectAlternativeName;
  } else if (!identity->common_name.empty()) {
    identity_property_ = kX509CommonName;
  }
}

std::vector<absl::string_view> AuthContext::FindPropertyValues(
    absl::string_view name) const {
  std::vector<absl::string_view> values;
  if (name.empty()) return values;
  for (const auto& [key, value] : properties_) {
    if (key == name) values.push_back(value);
  }
  return values;
}

bool AuthContext::SetPeerIdentityPropertyName(absl::string_view name) {
  for (const auto& property : properties_) {
    if (property.first == name) {
      identity_property_ = std::string(name);
      return true;
    }
  }
  return false;
}

}  // namespace h2rpc
