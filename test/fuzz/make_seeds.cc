// Writes the seed corpus (test/fuzz/corpus/<harness>/) from the project's own encoders, so the
// seeds are well-formed messages of the current format. Rerun after a format change:
//   build-fuzz/test/fuzz/make_seeds test/fuzz/corpus
// Text seeds (host lists, check-ins) are written here too, to keep every seed in one place.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/wire.h"
#include "core/envelope.h"
#include "core/request.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/hmac.h"
#include "rendezvous/protocol.h"
#include "rendezvous/worker_reports.h"
#include "state/checkpoint_format.h"

using namespace cohort;
namespace fs = std::filesystem;

namespace {

fs::path root;

void write(const std::string& harness, const std::string& name, std::string_view bytes) {
  fs::create_directories(root / harness);
  std::ofstream(root / harness / name, std::ios::binary).write(bytes.data(), bytes.size());
}

void write(const std::string& harness, const std::string& name, uint8_t first,
           std::string_view rest) {
  write(harness, name, std::string(1, static_cast<char>(first)) + std::string(rest));
}

std::string_view view(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

void request_lists() {
  RequestList list;
  list.applied = 7;
  list.hits = {(3u << 1) | 1, 4u << 1};
  list.requests.push_back(Request{.name = "grad/w",
                                  .dtype = DataType::kFloat16,
                                  .reduce_op = ReduceOp::kAverage,
                                  .prescale = 0.5,
                                  .shape = {4, 5}});
  list.requests.push_back(
      Request{.name = "grads", .group = {{DataType::kFloat32, {2, 3}}, {DataType::kInt64, {}}}});
  list.requests.push_back(Request{.name = "a2a",
                                  .type = OpType::kAlltoall,
                                  .dtype = DataType::kInt32,
                                  .shape = {6, 2},
                                  .splits = {2, 4}});
  list.requests.push_back(
      Request{.name = "set", .type = OpType::kAddProcessSet, .members = {0, 2, 3}});
  write("request_list", "several", view(encode(list)));
  write("request_list", "empty", view(encode(RequestList{.shutdown = true})));

  // A leader's envelope (core/envelope.h) of its ranks 8 to 15: a cached step's hits from six of
  // them (one entry), the full list from one, shutdown from another.
  EnvelopeBuilder envelope;
  RequestList hits;
  hits.hits = {2u << 1, 3u << 1, 4u << 1};
  for (int rank = 8; rank < 14; ++rank) envelope.add(rank, encode(hits));
  envelope.add(14, encode(list));
  envelope.add(15, encode(RequestList{.shutdown = true}));
  write("envelope", "step", view(envelope.take()));
}

void response_lists() {
  ResponseList list;
  list.evicted = {5};
  Response fused{.names = {"g", "z"}, .cache_ids = {0, 9}, .dtype = DataType::kFloat64};
  fused.counts = {1, 2, 3};
  fused.parts = {2, 1};
  fused.batches = {{2, DataType::kFloat64}, {1, DataType::kFloat64}};
  list.responses.push_back(fused);
  list.responses.push_back({.kind = Response::Kind::kError,
                            .type = OpType::kAllgather,
                            .names = {"x"},
                            .error = "shapes differ",
                            .first_dims = {1, 2}});
  write("response_list", "several", view(encode(list)));
  write("response_list", "abort",
        view(encode(ResponseList{.shutdown = true, .abort_reason = "rank 0 failed"})));
}

void control_messages() {
  wire::Writer hello;
  hello.i32(3);
  hello.str("0123456789abcdef0123456789abcdef");
  write("control_message", "hello", 0, view(hello.bytes()));
  wire::Writer mixed;
  mixed.u8(1);
  mixed.str("name");
  mixed.i64s({1, 2});
  mixed.u32s({3});
  // Reads: u8, str, i64s, u32s, expect_done.
  std::string ops = {0, 6, 7, 8, 9};
  write("control_message", "program", 128 | 5, ops + std::string(view(mixed.bytes())));
}

void rendezvous_messages() {
  using namespace rendezvous;
  std::string secret(kSecretSize, 's');  // the harness's secret
  RendezvousRequest set{.op = RendezvousOp::kSet,
                        .nonce = std::string(kNonceSize, 'n'),
                        .timestamp_ms = 1700000000000,
                        .scope = "round/1",
                        .key = "rank/0",
                        .value = "10.0.0.1:1234"};
  RendezvousRequest get{.op = RendezvousOp::kGet,
                        .nonce = std::string(kNonceSize, 'm'),
                        .key = "assign/w1/0",
                        .timeout_ms = 5000};
  RendezvousResponse ok{.nonce = std::string(kNonceSize, 'n'), .value = "round=1"};
  RendezvousResponse timeout{.nonce = std::string(kNonceSize, 'n'),
                             .status = RendezvousStatus::kTimeout,
                             .value = "no such key"};
  // First byte: bit 0 response, bit 1 signed by the harness (the body alone follows).
  auto body = [](const std::string& sealed) { return sealed.substr(0, sealed.size() - kMacSize); };
  write("rendezvous", "set", 2, body(seal_request(secret, set)));
  write("rendezvous", "get", 2, body(seal_request(secret, get)));
  write("rendezvous", "get_unsigned", 0, seal_request(secret, get));
  write("rendezvous", "ok", 3, body(seal_response(secret, ok)));
  write("rendezvous", "timeout", 3, body(seal_response(secret, timeout)));
}

void elastic_texts() {
  using namespace rendezvous;
  write("elastic_protocol", "checkin_start", 0, format_checkin({}));
  write("elastic_protocol", "checkin_failed", 0,
        format_checkin({CheckIn::Kind::kFailed, "allreduce 'g' failed: peer left"}));
  write("elastic_protocol", "assignment", 1,
        format_assignment(
            {.round = 3, .placement = {.rank = 1, .size = 4, .local_size = 2, .cross_size = 2}}));
  write("elastic_protocol", "exit", 1, "exit");
  write("elastic_protocol", "checkin_drained", 0,
        format_checkin({CheckIn::Kind::kDrained, "SIGTERM or request_drain()"}));
  write("elastic_protocol", "progress", 2, format_progress({.commits = 40, .samples = 960}));
  write("elastic_protocol", "reset_report", 3,
        format_reset_report({.round = 3,
                             .old_rank = 2,
                             .old_size = 4,
                             .new_rank = 1,
                             .new_size = 3,
                             .teardown_us = 812,
                             .assignment_us = 40211,
                             .connect_us = 9120}));
}

void host_texts() {
  write("hosts", "host_list", 0, "node1:4,node2,10.0.0.3:2");
  write("hosts", "hostfile", 1, "# cluster\nnode1 slots=4\nnode2   # one slot\n\nnode3 slots=2\n");
  write("hosts", "discovered", 2, "node1:2\nnode2\n# gone: node3\n  node4:8  \n");
}

void checkpoint() {
  using namespace elastic::detail;
  std::string payload = "a checkpoint payload";
  Sha256 hash;
  hash.update(std::as_bytes(std::span(payload)));
  auto digest = hash.finish();
  std::string file = "COHORTCK";
  auto put = [&](const auto& v) { file.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(kCheckpointVersion);
  put(static_cast<uint32_t>(kHeaderSize));
  put(static_cast<uint64_t>(payload.size()));
  file.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  put(uint64_t{0});
  file += payload;
  // First byte: bit 0 asks the harness to repair the size and digest; this one is already good.
  write("checkpoint_header", "good", 0, file);
  write("checkpoint_header", "truncated", 0, file.substr(0, 40));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds CORPUS_DIR\n";
    return 2;
  }
  root = argv[1];
  request_lists();
  response_lists();
  control_messages();
  rendezvous_messages();
  elastic_texts();
  host_texts();
  checkpoint();
  return 0;
}
