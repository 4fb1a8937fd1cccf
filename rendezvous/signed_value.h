// Values signed with the job secret and bound to their key, for stores that other jobs and users
// can write to (etcd is often shared): a value that was not sealed by this job for this very key
// (forged, or copied from another key) is refused. Sealing is deterministic, so a store can
// compare sealed values (compare-and-set) without knowing the secret.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort::rendezvous {

// "CV1", then HMAC-SHA256(secret, the key's length, the key, the value), then the value.
std::string seal_value(std::string_view secret, std::string_view key, std::string_view value);

// The value sealed in `sealed` for `key`; throws RendezvousRejected (rendezvous/protocol.h),
// saying why, when it was not sealed with `secret` for `key`.
std::string open_value(std::string_view secret, std::string_view key, std::string_view sealed);

// The value part of `text` if it has a sealed value's form, WITHOUT checking who sealed it: only
// to say in a message what a value sealed with another secret claims to be.
std::optional<std::string> unverified_value(std::string_view text);

}  // namespace cohort::rendezvous
