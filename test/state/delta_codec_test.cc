// The commit message codec: in-order records travel as a few bytes, any records decode exactly,
// and a receiver whose committed set differs from the sender's is caught, not silently merged.
#include <catch2/catch.hpp>

#include <random>

#include "cohort/errors.h"
#include "sim_world.h"
#include "state/delta_codec.h"

using namespace cohort::elastic::detail;
namespace wire = cohort::wire;

namespace {

ProcessedSet::Delta round_trip(const ProcessedSet& set, uint64_t lo, uint64_t hi, size_t* bytes) {
  wire::Writer out;
  encode_delta(out, set.delta(), set, lo, hi);
  *bytes = out.bytes().size();
  wire::Reader in(out.bytes());
  ProcessedSet::Delta back = decode_delta(in, set, lo, hi);
  REQUIRE(in.done());
  return back;
}

}  // namespace

TEST_CASE("in-order records over a range with committed holes travel in a few bytes") {
  const uint64_t n = 1'000'000, lo = 1000, hi = 600'000;
  ProcessedSet set(n);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 50'000; ++i) set.set(lo + rng() % (hi - lo));  // earlier commits
  set.mark_committed();
  // This rank now processes the first 400,000 positions of its range that are still open.
  uint64_t done = 0;
  for (uint64_t p = set.next_zero(lo, hi); done < 400'000; p = set.next_zero(p + 1, hi), ++done) {
    set.set(p);
  }
  size_t bytes = 0;
  ProcessedSet::Delta back = round_trip(set, lo, hi, &bytes);
  ProcessedSet::Delta sent = set.delta();
  CHECK(back.first_word == sent.first_word);
  CHECK(back.words == sent.words);
  CHECK(sent.words.size() > 6000);
  CHECK(bytes < 100);  // instead of 8 bytes per word
}

TEST_CASE("out-of-order records decode exactly") {
  const uint64_t n = 100'000;
  ProcessedSet set(n);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 3000; ++i) {
    uint64_t p = rng() % n;
    if (!set.test(p)) set.set(p);
  }
  size_t bytes = 0;
  ProcessedSet::Delta back = round_trip(set, 0, n, &bytes);
  CHECK(back.words == set.delta().words);
}

TEST_CASE("malformed runs are refused") {
  ProcessedSet set(1000);
  wire::Writer out;
  out.u64(2);  // first word
  out.u64(3);  // words
  out.u64(1);  // runs
  out.u8(1);   // fill
  out.u64(4);  // longer than the words
  wire::Reader in(out.bytes());
  CHECK_THROWS_AS(decode_delta(in, set, 0, 1000), wire::MalformedBytes);
  wire::Writer far;
  far.u64(100);  // past the 16 words of the set
  far.u64(1);
  far.u64(0);
  wire::Reader in2(far.bytes());
  CHECK_THROWS_AS(decode_delta(in2, set, 0, 1000), wire::MalformedBytes);
}

TEST_CASE("a rank whose committed set silently differs fails the commit everywhere") {
  // Corrupt rank 1's copy of the committed set where rank 0 has just recorded (count left alone).
  // In a word rank 0 sends as a fill, rank 1 rebuilds fewer bits than rank 0 declared; in a
  // literal word, rank 0's bits overlap what rank 1 believes committed. Either way: refused.
  for (uint64_t back : {250, 10}) {
    sim::World w = sim::make_world(10'000, 3, 2);
    for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(500).begin());
    w.commit();
    for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(500).begin());
    auto words = sim::core(w[1]).bitmap_words();
    uint64_t p = sim::core(w[0]).next_unprocessed(0) - back;
    words[p / 64] ^= uint64_t{1} << (p % 64);
    if (back == 250) {
      CHECK_THROWS_WITH(w.commit(), Catch::Contains("declared 500 new samples but sent 499"));
    } else {
      CHECK_THROWS_AS(w.commit(), cohort::MismatchError);
    }
  }
}

TEST_CASE("a rank's whole commit message stays small however many samples it recorded in order") {
  sim::World w = sim::make_world(1'000'000, 8, 2);
  for (int r = 0; r < 2; ++r) w[r].record(*w[r].batches(1000).begin());
  w.commit();
  w.restore();
  w.resize_and_sync(3);  // ranges now hold committed holes
  w[1].record(*w[1].batches(300'000).begin());
  wire::Writer out;
  sim::core(w[1]).write_delta(out);
  CHECK(out.bytes().size() < 200);
}
