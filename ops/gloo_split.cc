#include "ops/gloo_split.h"

#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cohort/errors.h"
#include "ops/backend_args.h"

namespace cohort::ops {
namespace {

// Gloo's own collectives use slot prefixes 0x01-0x08 and the reduce-scatter ring 0x40.
constexpr uint8_t kSplitSlotPrefix = 0x41;

// What one member tells another: the address of the pair it made for that member, and a
// fingerprint of the split, so that members that disagree fail instead of connecting.
struct AddressMessage {
  uint64_t fingerprint;
  uint32_t length;
  char bytes[gloo::transport::Address::kMaxByteSize];
};

// gloo::Context leaves its device and transport context to subclasses to set; this one takes
// pairs that were connected by hand.
class SubgroupContext final : public gloo::Context {
 public:
  SubgroupContext(int member, int members, std::chrono::milliseconds timeout,
                  std::shared_ptr<gloo::transport::Device> device,
                  std::shared_ptr<gloo::transport::Context> transport)
      : gloo::Context(member, members) {
    setTimeout(timeout);
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

uint64_t fingerprint(std::span<const int> ranks, const std::string& key) {
  uint64_t hash = stable_hash(key);
  for (int r : ranks) hash = stable_hash("," + std::to_string(r), hash);
  return hash;
}

// Sends outgoing[m] to member m and receives incoming[m] from it, for every other member m,
// over the parent's connections.
void trade(gloo::Context& parent, std::span<const int> ranks, int self, const std::string& key,
           std::vector<AddressMessage>& outgoing, std::vector<AddressMessage>& incoming) {
  constexpr size_t kSize = sizeof(AddressMessage);
  auto out = parent.createUnboundBuffer(outgoing.data(), outgoing.size() * kSize);
  auto in = parent.createUnboundBuffer(incoming.data(), incoming.size() * kSize);
  const auto slot = gloo::Slot::build(kSplitSlotPrefix, static_cast<uint32_t>(stable_hash(key)));
  for (size_t m = 0; m < ranks.size(); ++m) {
    if (static_cast<int>(m) == self) continue;
    out->send(ranks[m], slot, m * kSize, kSize);
    in->recv(ranks[m], slot, m * kSize, kSize);
  }
  const auto timeout = parent.getTimeout();
  for (size_t peers = 1; peers < ranks.size(); ++peers) {
    if (!in->waitRecv(timeout) || !out->waitSend(timeout)) {
      throw InternalError("Gloo split: an address exchange was aborted");
    }
  }
}

// Makes a pair for every other member on `device`, trades their addresses through `trade_fn`
// and connects the pairs: a context over the members, numbered from `self`. `mismatch(m)`
// describes member m having traded with another `check` than this one.
template <typename Trade, typename Mismatch>
std::shared_ptr<gloo::Context> connect_by_trade(
    const std::shared_ptr<gloo::transport::Device>& device, int self, int size,
    std::chrono::milliseconds timeout, uint64_t check, Trade&& trade_fn, Mismatch&& mismatch) {
  auto transport = device->createContext(self, size);
  transport->setTimeout(timeout);
  std::vector<AddressMessage> outgoing(size), incoming(size);
  for (int m = 0; m < size; ++m) {
    if (m == self) continue;
    auto address = transport->createPair(m)->address().bytes();
    if (address.size() > sizeof outgoing[m].bytes) {
      throw InternalError("Gloo connect: a pair address has " + std::to_string(address.size()) +
                          " bytes, more than Gloo's bound");
    }
    outgoing[m].fingerprint = check;
    outgoing[m].length = static_cast<uint32_t>(address.size());
    std::memcpy(outgoing[m].bytes, address.data(), address.size());
  }
  trade_fn(outgoing, incoming);

  // Every member connects its pairs in member order, as connectFullMesh does in rank order, so
  // each pair's two ends meet.
  for (int m = 0; m < size; ++m) {
    if (m == self) continue;
    const auto& message = incoming[m];
    if (message.fingerprint != check || message.length > sizeof message.bytes) {
      throw InternalError(mismatch(m));
    }
    transport->getPair(m)->connect(
        std::vector<char>(message.bytes, message.bytes + message.length));
  }
  return std::make_shared<SubgroupContext>(self, size, timeout, device, std::move(transport));
}

}  // namespace

std::shared_ptr<gloo::Context> connect_gloo_subgroup(const std::shared_ptr<gloo::Context>& parent,
                                                     std::span<const int> ranks,
                                                     const std::string& key) {
  const int self =
      static_cast<int>(std::find(ranks.begin(), ranks.end(), parent->rank) - ranks.begin());
  return connect_by_trade(
      parent->getDevice(), self, static_cast<int>(ranks.size()), parent->getTimeout(),
      fingerprint(ranks, key),
      [&](auto& outgoing, auto& incoming) { trade(*parent, ranks, self, key, outgoing, incoming); },
      [&](int m) {
        return "Gloo split: rank " + std::to_string(ranks[m]) +
               " split with another key or member list than rank " + std::to_string(parent->rank) +
               " (key '" + key + "')";
      });
}

std::shared_ptr<gloo::Context> connect_gloo_through(Backend& bootstrap, const std::string& hostname,
                                                    std::chrono::milliseconds timeout) {
  gloo::transport::tcp::attr attr;
  attr.hostname = hostname;
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
  const int size = bootstrap.size();
  const uint64_t check = stable_hash("gloo through " + std::string(bootstrap.name()));
  return connect_by_trade(
      device, bootstrap.rank(), size, timeout, check,
      [&](auto& outgoing, auto& incoming) {
        // Its own (empty) block too: alltoallv packs the blocks, so each stays at its index.
        std::vector<size_t> counts(static_cast<size_t>(size), sizeof(AddressMessage));
        bootstrap.alltoallv(outgoing.data(), counts, incoming.data(), counts);
      },
      [&](int m) {
        return "Gloo connect through " + std::string(bootstrap.name()) + ": rank " +
               std::to_string(m) + " sent a malformed pair address";
      });
}

}  // namespace cohort::ops
