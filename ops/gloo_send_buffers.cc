#include "ops/gloo_send_buffers.h"

#include <memory>
#include <vector>

namespace cohort::ops {

void size_gloo_send_buffers(gloo::Context& context) {
  if (context.size == 1) return;
  // Taken first on every rank of a fresh context, so the same slot on every rank.
  const int slot = context.nextSlot();
  std::vector<char> outgoing(kGlooSendBufferWarmUp, 0);
  std::vector<std::vector<char>> incoming;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> sends, recvs;
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    auto& pair = context.getPair(peer);
    incoming.emplace_back(kGlooSendBufferWarmUp);
    recvs.push_back(pair->createRecvBuffer(slot, incoming.back().data(), kGlooSendBufferWarmUp));
    sends.push_back(pair->createSendBuffer(slot, outgoing.data(), kGlooSendBufferWarmUp));
  }
  for (auto& send : sends) send->send();
  for (auto& send : sends) send->waitSend();
  for (auto& recv : recvs) recv->waitRecv();
}

}  // namespace cohort::ops
