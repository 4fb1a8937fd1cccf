// Host leaders' envelopes (core/envelope.h) and rank 0 taking them (core/coordination.h): the
// encoding round trip, merged lists, malformed envelopes refused naming the leader, and the same
// responses and errors as when every rank sends its own list.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "core/coordination.h"
#include "core/envelope.h"
#include "core/leader.h"
#include "core/response_cache.h"

using namespace cohort;

namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// The entries of `envelope` as `leader` of `behind` sent them, decoded.
std::vector<EnvelopeEntry> decoded(const std::vector<std::byte>& envelope, int leader,
                                   std::vector<int> behind, int size = 16) {
  EnvelopeView view;
  decode_envelope(envelope, leader, size, behind, view);
  std::vector<EnvelopeEntry> out;
  for (const auto& e : view.entries) {
    auto ranks = view.ranks_of(e);
    out.push_back({{ranks.begin(), ranks.end()}, {e.list.begin(), e.list.end()}});
  }
  return out;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an envelope round-trips, lists with the same bytes merged into one entry") {
  auto a = bytes({0xC2, 1, 2}), b = bytes({0xC2, 7});
  EnvelopeBuilder up;
  up.add(9, a);
  up.add(8, a);
  up.add(10, b);
  up.add(11, a);
  CHECK(up.entries().size() == 2);
  auto envelope = up.take();
  CHECK(up.empty());
  CHECK(is_envelope(envelope));
  CHECK_FALSE(is_envelope(a));
  auto entries = decoded(envelope, 8, {8, 9, 10, 11});
  REQUIRE(entries.size() == 2);
  CHECK(entries[0] == EnvelopeEntry{{8, 9, 11}, a});
  CHECK(entries[1] == EnvelopeEntry{{10}, b});
}

TEST_CASE("a rank's lists keep their order in an envelope") {
  auto a = bytes({0xC2, 1}), b = bytes({0xC2, 2});
  EnvelopeBuilder up;
  up.add(2, a);
  up.add(2, b);
  up.add(3, b);
  up.add(3, a);  // after rank 3's b: may not join the first entry
  auto entries = decoded(up.take(), 2, {2, 3});
  REQUIRE(entries.size() == 3);
  CHECK(entries[0] == EnvelopeEntry{{2}, a});
  CHECK(entries[1] == EnvelopeEntry{{2, 3}, b});
  CHECK(entries[2] == EnvelopeEntry{{3}, a});
}

TEST_CASE("a malformed envelope is refused naming its leader") {
  auto list = bytes({0xC2, 1});
  auto entry = [&](std::vector<int> ranks) { return encode_envelope({{std::move(ranks), list}}); };
  std::string name = "rank 4 (a host leader) sent a malformed envelope: ";
  CHECK_THAT(refusal([&] {
               decoded(entry({4, 6}), 4, {4, 5});
             }),
             Catch::Matchers::StartsWith(name + "rank 6 is not behind this leader"));
  CHECK_THAT(refusal([&] {
               decoded(entry({5, 4}), 4, {4, 5});
             }),
             Catch::Matchers::StartsWith(name + "an entry's ranks are not ascending"));
  CHECK_THAT(refusal([&] {
               decoded(entry({}), 4, {4, 5});
             }),
             Catch::Matchers::StartsWith(name + "an entry names no rank"));
  CHECK_THAT(refusal([&] {
               decoded(entry({40}), 4, {4, 5});
             }),
             Catch::Matchers::StartsWith(name + "rank 40 is not below the size 16"));
  auto cut = entry({4});
  cut.pop_back();
  CHECK_THAT(refusal([&] { decoded(cut, 4, {4, 5}); }), Catch::Matchers::StartsWith(name));
  CHECK_THAT(refusal([&] {
               decoded(list, 4, {4, 5});
             }),
             Catch::Matchers::StartsWith(name + "not an envelope"));
}

TEST_CASE("host leaders: each rank's leader is the lowest rank on its host") {
  using Hosts = std::vector<std::string>;
  CHECK(host_leaders(Hosts{"a", "a", "b", "b", "b", "c"}) == std::vector<int>{0, 0, 2, 2, 2, 5});
  // A host's ranks need not be consecutive: each still goes through a leader on its own host.
  CHECK(host_leaders(Hosts{"a", "b", "a", "c", "b"}) == std::vector<int>{0, 1, 0, 3, 1});
  CHECK(host_leaders(Hosts{"a", "b", "b", "a"}) == std::vector<int>{0, 1, 1, 0});
  CHECK(host_leaders(Hosts{"x"}) == std::vector<int>{0});
  std::vector<int> leader_of{0, 0, 2, 2, 4, 4};
  CHECK(control_peers(0, leader_of) == std::vector<int>{1, 2, 4});
  CHECK(control_peers(2, leader_of) == std::vector<int>{3});
  CHECK(control_peers(3, leader_of).empty());
  std::vector<int> interleaved{0, 1, 0, 3, 1};
  CHECK(control_peers(0, interleaved) == std::vector<int>{1, 2, 3});
  CHECK(control_peers(1, interleaved) == std::vector<int>{4});
  CHECK(control_peers(3, interleaved).empty());
  CHECK(led_by(1, interleaved) == std::vector<int>{1, 4});
  CHECK(led_by(0, interleaved) == std::vector<int>{0, 2});
}

TEST_CASE("host leaders: automatic over several hosts where some host has several ranks") {
  using H = Config::Hierarchy;
  using Hosts = std::vector<std::string>;
  Hosts shared{"a", "a", "b"}, one_host{"a", "a"}, one_each{"a", "b", "c"};
  CHECK(leaders_wanted(H::kAuto, shared));
  CHECK(leaders_wanted(H::kAuto, Hosts{"a", "b", "a"}));  // not consecutive: grouped by host
  CHECK_FALSE(leaders_wanted(H::kAuto, one_host));
  CHECK_FALSE(leaders_wanted(H::kAuto, one_each));
  CHECK(leaders_wanted(H::kOn, one_host));
  CHECK(leaders_wanted(H::kOn, one_each));
  CHECK_FALSE(leaders_wanted(H::kOff, shared));
  CHECK_FALSE(leaders_wanted(H::kOn, Hosts{}));  // a world of one gathers no hosts
  CHECK_FALSE(leaders_wanted(H::kOn, Hosts{"a"}));
}

TEST_CASE("host leaders: rank lists as the logs name them") {
  CHECK(describe_ranks(std::vector<int>{4}) == "rank 4");
  CHECK(describe_ranks(std::vector<int>{2, 3}) == "ranks 2 to 3");
  CHECK(describe_ranks(std::vector<int>{1, 4}) == "ranks 1, 4");
  CHECK(describe_ranks(std::vector<int>{1, 4, 5, 6, 9}) == "ranks 1, 4 to 6, 9");
}

namespace {

// Rank 0 of 4 ranks on 2 hosts (ranks 0-1 and 2-3), taking each rank's own list (`star`) or,
// for ranks 2 and 3, their leader's envelope (`leaders`): both must answer the same.
struct Twins {
  Config config;
  Timeline timeline;
  Coordination star{config, 4, timeline};
  Coordination leaders{config, 4, timeline, {0, 0, 2, 2}};
  CacheView view;  // every simulated rank's, while they submit the same

  // One cycle; `lists[r]` is rank r's encoded RequestList (rank 0's own are `own`). Returns the
  // two encoded answers.
  std::pair<std::vector<std::byte>, std::vector<std::byte>> cycle(
      const std::vector<std::vector<std::byte>>& lists, std::vector<Request> own) {
    std::vector<ControlMessage> each{{1, lists[1]}, {2, lists[2]}, {3, lists[3]}};
    EnvelopeBuilder up;
    up.add(2, lists[2]);
    up.add(3, lists[3]);
    std::vector<ControlMessage> through{{1, lists[1]}, {2, up.take()}};
    auto a = star.cycle(each, own, false);
    auto b = leaders.cycle(through, own, false);
    REQUIRE(a.has_value() == b.has_value());
    if (!a) return {};
    return {encode(*a), encode(*b)};
  }
};

std::vector<Request> model() {
  return {Request{.name = "w0", .shape = {4}}, Request{.name = "w1", .shape = {8, 2}}};
}

std::vector<std::byte> list_of(CacheView& view, std::vector<Request> requests) {
  RequestList list;
  list.applied = view.applied();
  for (auto& r : requests) view.add(list, std::move(r));
  return encode(list);
}

}  // namespace

TEST_CASE("rank 0 answers envelopes as it answers each rank's own list") {
  Twins t;
  for (int step = 0; step < 3; ++step) {  // the first in full, then cached hits
    auto list = list_of(t.view, model());
    auto [star, leaders] = t.cycle({{}, list, list, list}, model());
    REQUIRE_FALSE(star.empty());
    CHECK(star == leaders);
    auto answer = decode_response_list(star);
    t.view.apply(answer);
  }
}

TEST_CASE("a mismatch inside an envelope names the ranks, as without leaders") {
  Twins t;
  auto list = list_of(t.view, model());
  CacheView other;
  auto odd = list_of(other, {Request{.name = "w0", .shape = {5}}, model()[1]});
  auto [star, leaders] = t.cycle({{}, list, list, odd}, model());
  CHECK(star == leaders);
  auto answer = decode_response_list(leaders);
  REQUIRE_FALSE(answer.responses.empty());
  CHECK_THAT(answer.responses[0].error, Catch::Matchers::Contains("rank 2 [4], rank 3 [5]"));
}

TEST_CASE("a malformed list inside an envelope names its ranks and their leader") {
  Config config;
  Timeline timeline;
  Coordination rank0(config, 4, timeline, {0, 0, 2, 2});
  auto bad = bytes({0xC2});
  auto envelope = encode_envelope({{{2, 3}, bad}});
  CHECK_THAT(refusal([&] {
               rank0.cycle({{2, envelope}}, {}, false);
             }),
             Catch::Matchers::StartsWith(
                 "ranks 2, 3 (through their leader, rank 2) sent a malformed control message"));
  // A leader may speak for its own host's ranks only.
  auto stray = encode_envelope({{{1}, bad}});
  CHECK_THAT(refusal([&] {
               rank0.cycle({{2, stray}}, {}, false);
             }),
             Catch::Matchers::Contains("rank 1 is not behind this leader"));
}
