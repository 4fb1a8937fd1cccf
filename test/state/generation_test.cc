// The generation before the last commit, which every value keeps while a commit's sharded replicas
// travel (state/shard_sync.h): a buffer's and an object's previous snapshot, and a sampler's
// committed image, each taken back exactly as it was.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "state/sampler_core.h"
#include "state/values.h"

using namespace cohort::elastic::detail;
namespace wire = cohort::wire;

namespace {

void commit(SamplerCore& core) {  // a world of one: its own delta is the whole merge
  wire::Writer delta;
  core.write_delta(delta);
  std::vector<wire::Reader> in{wire::Reader(delta.bytes())};
  core.apply_merge(core.check_merge(in));
}

}  // namespace

TEST_CASE("generations: a buffer steps back to the snapshot before its last one, once") {
  std::vector<float> live{1, 2, 3};
  BufferValue b("w", cohort::DataType::kFloat32,
                [&] { return std::as_writable_bytes(std::span<float>(live)); });
  b.take_snapshot(/*keep_previous=*/true);  // the first: nothing to keep
  CHECK_FALSE(b.has_previous());
  live = {4, 5, 6};
  b.take_snapshot(true);
  CHECK(b.has_previous());
  live = {7, 8, 9};
  b.step_back();
  CHECK(live == std::vector<float>{1, 2, 3});
  CHECK_FALSE(b.has_previous());
  live = {0, 0, 0};
  b.restore_snapshot();  // the previous generation is the snapshot now
  CHECK(live == std::vector<float>{1, 2, 3});
  b.take_snapshot(true);
  b.take_snapshot(false);  // a commit that waits for its replicas keeps none
  CHECK_FALSE(b.has_previous());
}

TEST_CASE("generations: an object steps back only if its previous bytes parse") {
  std::string value = "a";
  bool refuse = false;
  ObjectValue o("o", {.type_name = "text",
                      .save = [&] { return value; },
                      .load = [&](std::string_view bytes) -> std::function<void()> {
                        if (refuse) throw std::runtime_error("no");
                        return [&value, s = std::string(bytes)] { value = s; };
                      }});
  o.set_snapshot("a", true);
  o.set_snapshot("b", true);
  value = "c";
  refuse = true;
  CHECK_THROWS(o.stage_step_back());
  CHECK(value == "c");
  CHECK(o.snapshot() == "b");
  refuse = false;
  std::function<void()> assign = o.stage_step_back();
  CHECK(value == "c");  // staged, not applied
  assign();
  CHECK(value == "a");
  CHECK(o.snapshot() == "a");
  CHECK_FALSE(o.has_previous());
  o.stage_step_back()();  // none left: nothing changes
  CHECK(value == "a");
}

TEST_CASE("generations: a sampler's committed image loads back its committed set and epoch") {
  SamplerCore core(100, 7, 0, 1);
  std::vector<uint64_t> first;
  for (uint64_t p = 0; p < 10; ++p) first.push_back(core.sample_at(p));
  core.record(first);
  commit(core);
  SamplerCore::Image image = core.committed_image();
  CHECK(image.epoch == 0);
  std::vector<uint64_t> second;
  for (uint64_t p = 10; p < 30; ++p) second.push_back(core.sample_at(p));
  core.record(second);
  commit(core);
  CHECK(core.unprocessed() == 70);
  core.load(image);
  CHECK(core.unprocessed() == 90);
  for (uint64_t s : first) CHECK(core.is_committed(s));
  for (uint64_t s : second) CHECK_FALSE(core.is_committed(s));
  // An epoch begun after the commit: the image is still of the committed epoch.
  core.set_epoch(1);
  CHECK(core.committed_image().epoch == 0);
}
