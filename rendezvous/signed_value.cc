#include "rendezvous/signed_value.h"

#include "base/wire.h"
#include "rendezvous/hmac.h"
#include "rendezvous/protocol.h"

namespace cohort::rendezvous {
namespace {

constexpr std::string_view kMagic = "CV1";

std::string mac(std::string_view secret, std::string_view key, std::string_view value) {
  wire::Writer w;
  w.str(std::string(key));
  const auto& head = w.bytes();
  std::string data(reinterpret_cast<const char*>(head.data()), head.size());
  data += value;
  return hmac_sha256(secret, data);
}

}  // namespace

std::string seal_value(std::string_view secret, std::string_view key, std::string_view value) {
  return std::string(kMagic) + mac(secret, key, value) + std::string(value);
}

std::optional<std::string> unverified_value(std::string_view text) {
  if (text.size() < kMagic.size() + kMacSize || !text.starts_with(kMagic)) return std::nullopt;
  return std::string(text.substr(kMagic.size() + kMacSize));
}

std::string open_value(std::string_view secret, std::string_view key, std::string_view sealed) {
  if (sealed.size() < kMagic.size() + kMacSize || !sealed.starts_with(kMagic)) {
    throw RendezvousRejected("value of '" + std::string(key) + "' is not a sealed Cohort value");
  }
  std::string_view value = sealed.substr(kMagic.size() + kMacSize);
  if (!constant_time_equal(sealed.substr(kMagic.size(), kMacSize), mac(secret, key, value))) {
    throw RendezvousRejected("value of '" + std::string(key) +
                             "' is not signed with the job secret for this key (forged, or "
                             "copied from another key)");
  }
  return std::string(value);
}

}  // namespace cohort::rendezvous
