// State's value kinds, commit/restore/sync and its errors, in a world of one.
#include <catch2/catch.hpp>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <map>

#include "cohort/cohort.h"
#include "cohort/elastic/state.h"

using cohort::InvalidArgument;
using cohort::elastic::ElasticSampler;
using cohort::elastic::State;

namespace {

struct Progress {
  int epoch = 0;
  std::string phase;
  std::map<std::string, double> metrics;
  std::vector<uint32_t> rng_state;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(epoch, phase, metrics, rng_state);
  }
  bool operator==(const Progress&) const = default;
};

struct Fragile {
  bool fail = false;
  int value = 0;
  template <class Archive>
  void save(Archive& ar) const {
    if (fail) throw std::runtime_error("refuses to serialize");
    ar(value);
  }
  template <class Archive>
  void load(Archive& ar) {
    ar(value);
  }
};

void init() {
  cohort::init();
  REQUIRE(cohort::size() == 1);
}

}  // namespace

TEST_CASE("buffers: restore after partial modification returns every buffer to the commit") {
  init();
  State state;
  std::vector<float> weights(1000, 1.0f);
  std::vector<double> moments(37, 2.0);
  std::array<int64_t, 5> counters{1, 2, 3, 4, 5};
  state.track("weights", weights);
  state.track("moments", moments);
  state.track("counters", std::span<int64_t>(counters));
  state.commit();
  weights[3] = 9.0f;
  moments.assign(37, -1.0);
  counters[4] = 50;
  state.restore();
  CHECK(weights == std::vector<float>(1000, 1.0f));
  CHECK(moments == std::vector<double>(37, 2.0));
  CHECK(counters == std::array<int64_t, 5>{1, 2, 3, 4, 5});
  // A second commit moves the restore point.
  weights[0] = 7.0f;
  state.commit();
  weights[0] = 8.0f;
  state.restore();
  CHECK(weights[0] == 7.0f);
  CHECK(state.commit_count() == 2);
}

TEST_CASE("objects: any cereal-serializable value commits as bytes and restores by value") {
  init();
  State state;
  Progress progress{3, "warmup", {{"loss", 0.5}}, {1, 2, 3}};
  int epoch = 4;
  std::string tag = "run-a";
  state.track("progress", progress);
  state.track("epoch", epoch);
  state.track("tag", tag);
  state.commit();
  Progress before = progress;
  progress.metrics["loss"] = 0.1;
  progress.rng_state.push_back(9);
  epoch = 5;
  tag = "changed";
  state.restore();
  CHECK(progress == before);
  CHECK(epoch == 4);
  CHECK(tag == "run-a");
}

TEST_CASE("restore before any commit and of values tracked after it is refused, changing nothing") {
  init();
  State state;
  std::vector<float> a(4, 1.0f);
  state.track("a", a);
  CHECK_THROWS_WITH(state.restore(), Catch::Contains("no commit"));
  state.commit();
  a[0] = 2.0f;
  int late = 1;
  state.track("late", late);
  CHECK_THROWS_WITH(state.restore(), Catch::Contains("'late' was tracked after the last commit"));
  CHECK(a[0] == 2.0f);
  state.commit();
  state.restore();
  CHECK(a[0] == 2.0f);
}

TEST_CASE("a resized buffer is refused by commit and restore, changing nothing") {
  init();
  State state;
  std::vector<float> a(4, 1.0f), b(3, 1.0f);
  state.track("a", a);
  state.track("b", b);
  state.commit();
  b[0] = 5.0f;
  a.push_back(2.0f);
  CHECK_THROWS_WITH(state.commit(), Catch::Contains("'a' now has 5 elements but had 4"));
  CHECK_THROWS_AS(state.restore(), InvalidArgument);
  CHECK(b[0] == 5.0f);  // nothing restored either
  CHECK(state.commit_count() == 1);
  a.pop_back();
  state.restore();
  CHECK(b[0] == 1.0f);
}

TEST_CASE("a failing serializer fails the commit on every rank and keeps the previous one") {
  init();
  State state;
  Fragile f{false, 1};
  std::vector<int32_t> v(2, 1);
  state.track("v", v);
  state.track("fragile", f);
  state.commit();
  f.fail = true;
  f.value = 2;
  v[0] = 2;
  CHECK_THROWS_WITH(state.commit(), Catch::Contains("'fragile' failed to serialize"));
  CHECK(state.commit_count() == 1);
  f.fail = false;
  state.restore();
  CHECK(f.value == 1);
  CHECK(v[0] == 1);
}

TEST_CASE("bad names are refused") {
  init();
  State state;
  int x = 0, y = 0;
  state.track("x", x);
  CHECK_THROWS_AS(state.track("x", y), InvalidArgument);
  CHECK_THROWS_AS(state.track("", y), InvalidArgument);
  CHECK_THROWS_AS(State(""), InvalidArgument);
  ElasticSampler s(10, 1);
  state.track("s", s);
  CHECK_THROWS_AS(state.track("s2", s), InvalidArgument);
  CHECK(state.names() == std::vector<std::string>{"x", "s"});
}

TEST_CASE("corrupt or foreign bytes give a clear error and leave the object untouched") {
  Progress p{1, "a", {}, {}};
  auto access = cohort::elastic::detail::object_access(p);
  CHECK_THROWS(access.load("\x01\x02"));
  int other = 12345;
  std::string bytes = cohort::elastic::detail::object_access(other).save();
  CHECK_THROWS(access.load(bytes));  // an int's bytes are too short for Progress
  auto int_access = cohort::elastic::detail::object_access(other);
  CHECK_THROWS(int_access.load(bytes + "x"));  // bytes left over
  CHECK(p.epoch == 1);
  CHECK(p.phase == "a");
}

TEST_CASE("commit hook runs after a complete commit, reset callbacks run in order") {
  init();
  State state;
  int value = 1, hooked_with = 0;
  state.track("value", value);
  state.set_commit_hook([&] {
    hooked_with = value;
    throw std::runtime_error("hosts updated");
  });
  CHECK_THROWS_WITH(state.commit(), "hosts updated");
  CHECK(hooked_with == 1);
  CHECK(state.commit_count() == 1);  // the commit itself is complete
  value = 2;
  state.restore();
  CHECK(value == 1);
  state.set_commit_hook({});
  CHECK_NOTHROW(state.commit());
  std::vector<int> order;
  state.add_reset_callback([&] { order.push_back(1); });
  state.add_reset_callback([&] { order.push_back(2); });
  state.run_reset_callbacks();
  CHECK(order == std::vector<int>{1, 2});
}

TEST_CASE("sync in a world of one keeps the values and becomes the restore point") {
  init();
  State state;
  std::vector<float> w(8, 3.0f);
  int epoch = 2;
  ElasticSampler sampler(100, 4);
  state.track("w", w);
  state.track("epoch", epoch);
  state.track("sampler", sampler);
  state.sync();
  CHECK(state.has_commit());
  w[1] = 0.0f;
  epoch = 3;
  state.restore();
  CHECK(w[1] == 3.0f);
  CHECK(epoch == 2);
}

TEST_CASE("a tracked sampler commits with the State and restores with it") {
  init();
  State state;
  ElasticSampler sampler(1000, 4);
  state.track("sampler", sampler);
  state.sync();
  auto first = *sampler.batches(100).begin();
  sampler.record(first);
  state.commit();
  CHECK(sampler.unprocessed() == 900);
  sampler.record(*sampler.batches(100).begin());
  CHECK_THROWS_WITH(state.sync(), Catch::Contains("uncommitted records"));
  state.restore();
  CHECK(sampler.uncommitted() == 0);
  CHECK(sampler.unprocessed() == 900);
  CHECK(sampler.steps(100) == 9);
  state.sync();
}

TEST_CASE("bytes: a value whose size changes commits through the program's callbacks") {
  init();
  State state;
  std::vector<std::string> lines;  // grows between commits, like an optimizer's lazy state
  auto save = [&lines] {
    std::string out;
    for (const auto& l : lines) out += l + '\n';
    return out;
  };
  auto parse = [&lines](std::string_view bytes) -> std::function<void()> {
    if (!bytes.empty() && bytes.back() != '\n') throw std::runtime_error("truncated");
    std::vector<std::string> parsed;
    for (size_t at = 0; at < bytes.size();) {
      size_t end = bytes.find('\n', at);
      parsed.emplace_back(bytes.substr(at, end - at));
      at = end + 1;
    }
    return [&lines, parsed = std::move(parsed)] { lines = parsed; };
  };
  state.track_bytes("lines", "lines/v1", save, parse);
  state.commit();
  lines = {"a", "bb"};
  state.commit();
  lines.push_back("ccc");
  state.restore();
  CHECK(lines == std::vector<std::string>{"a", "bb"});

  CHECK_THROWS_AS(state.track_bytes("empty", "x", nullptr, parse), InvalidArgument);
  CHECK_THROWS_AS(state.track_bytes("lines", "x", save, parse), InvalidArgument);
}
