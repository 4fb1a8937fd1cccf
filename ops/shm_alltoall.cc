#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "ops/shm_collectives.h"

namespace cohort::ops::shm {
namespace {

// Every member's send and receive counts, as the first step shares them: sends[p][q] is what p
// sends q, receives[q][p] what q expects from p.
struct Counts {
  int members;
  std::vector<size_t> sends, receives;  // members x members, row-major

  size_t send(int from, int to) const { return sends[from * members + to]; }
  size_t receive(int at, int from) const { return receives[at * members + from]; }
  // Where `to`'s block begins in `from`'s input.
  size_t send_offset(int from, int to) const {
    auto row = sends.begin() + from * members;
    return std::accumulate(row, row + to, size_t{0});
  }
  size_t sent_by(int from) const { return send_offset(from, members); }
};

Counts share_counts(ShmGroup& group, std::span<const size_t> send_counts,
                    std::span<const size_t> recv_counts) {
  int n = group.size();
  auto bank = group.next_bank();
  auto* mine = reinterpret_cast<size_t*>(bank.slot(group.rank()));
  std::copy(send_counts.begin(), send_counts.end(), mine);
  std::copy(recv_counts.begin(), recv_counts.end(), mine + n);
  group.barrier("alltoall");
  Counts counts{n, std::vector<size_t>(n * n), std::vector<size_t>(n * n)};
  for (int member = 0; member < n; ++member) {
    auto* theirs = reinterpret_cast<const size_t*>(bank.slot(member));
    std::copy(theirs, theirs + n, counts.sends.begin() + member * n);
    std::copy(theirs + n, theirs + 2 * n, counts.receives.begin() + member * n);
  }
  return counts;
}

// The same verdict on every member, since every member checks every pair.
void check_pairs(const Counts& counts) {
  for (int from = 0; from < counts.members; ++from) {
    for (int to = 0; to < counts.members; ++to) {
      if (counts.send(from, to) == counts.receive(to, from)) continue;
      throw InvalidArgument("shared-memory alltoall: local rank " + std::to_string(from) +
                            " sends " + std::to_string(counts.send(from, to)) +
                            " bytes to local rank " + std::to_string(to) + ", which expects " +
                            std::to_string(counts.receive(to, from)));
    }
  }
}

}  // namespace

// After the counts, step k carries bytes [k * slot, (k + 1) * slot) of every member's input; each
// member copies out the part of every slot addressed to it.
void alltoallv(ShmGroup& group, const void* input, std::span<const size_t> send_counts,
               void* output, std::span<const size_t> recv_counts) {
  Counts counts = share_counts(group, send_counts, recv_counts);
  check_pairs(counts);
  int me = group.rank();
  std::vector<size_t> received_at(group.size(), 0);
  for (int from = 1; from < group.size(); ++from) {
    received_at[from] = received_at[from - 1] + recv_counts[from - 1];
  }
  size_t longest = 0;
  for (int from = 0; from < group.size(); ++from) longest = std::max(longest, counts.sent_by(from));
  size_t slot = group.slot_bytes();
  auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  for (size_t at = 0; at < longest; at += slot) {
    auto bank = group.next_bank();
    size_t mine = counts.sent_by(me);
    copy_bytes(bank.slot(me), in + std::min(at, mine), std::min(slot, mine - std::min(at, mine)));
    group.barrier("alltoall");
    for (int from = 0; from < group.size(); ++from) {
      size_t begin = counts.send_offset(from, me), end = begin + counts.send(from, me);
      size_t lo = std::max(begin, at), hi = std::min(end, at + slot);
      if (lo >= hi) continue;
      copy_bytes(out + received_at[from] + (lo - begin), bank.slot(from) + (lo - at), hi - lo);
    }
  }
}

}  // namespace cohort::ops::shm
