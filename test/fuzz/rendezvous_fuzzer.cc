// Rendezvous requests and responses (rendezvous/protocol.h). The input's first byte
// picks the message and whether the harness signs it: an unsigned body exercises the MAC check,
// a signed one reaches the parser behind it (as a peer that knows the job secret could). Every
// refusal must be RendezvousRejected; an accepted message must survive sealing and opening again.
#include "rendezvous/hmac.h"
#include "rendezvous/protocol.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;
using namespace cohort::rendezvous;

namespace {

const std::string kSecret(kSecretSize, 's');

bool same(const RendezvousRequest& a, const RendezvousRequest& b) {
  return a.op == b.op && a.nonce == b.nonce && a.timestamp_ms == b.timestamp_ms &&
         a.scope == b.scope && a.key == b.key && a.value == b.value && a.timeout_ms == b.timeout_ms;
}

bool same(const RendezvousResponse& a, const RendezvousResponse& b) {
  return a.nonce == b.nonce && a.status == b.status && a.value == b.value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool response = data[0] & 1, sign = data[0] & 2;
  std::string body(fuzz::text(data + 1, size - 1));
  std::string sealed = sign ? body + hmac_sha256(kSecret, body) : body;
  try {
    if (response) {
      RendezvousResponse r = open_response(kSecret, sealed);
      fuzz::require(same(open_response(kSecret, seal_response(kSecret, r)), r));
    } else {
      RendezvousRequest r = open_request(kSecret, sealed);
      fuzz::require(same(open_request(kSecret, seal_request(kSecret, r)), r));
    }
  } catch (const RendezvousRejected&) {
    // The only refusal the server and the client expect: any other error is a finding.
  }
  return 0;
}
