// State::commit(): local checks and serialization, one allgather that carries every rank's
// outcome and sampler records, identical checks on every rank, the sharded values' replicas
// (state/shard_sync.h: started, and waited for at the next commit when they overlap the step),
// then the snapshot.
#include "cohort/cohort.h"
#include "state/agreement.h"
#include "state/shard_sync.h"
#include "state/state_impl.h"

namespace cohort::elastic::detail {
namespace {

// Everything that can fail locally, done before the collective: buffer sizes and serializers.
Outcome prepare(const StateImpl& s, std::vector<std::string>& staged) {
  return capture([&] {
    check_shards(s);
    for (const BufferValue& b : s.buffers) b.live();
    for (const ObjectValue& o : s.objects) {
      try {
        staged.push_back(o.save());
      } catch (const std::exception& e) {
        throw InvalidArgument("value '" + o.name() + "' failed to serialize: " + e.what());
      }
    }
  });
}

wire::Writer contribution(const StateImpl& s, const Outcome& outcome) {
  wire::Writer out;
  write_outcome(out, outcome);
  out.u64(s.commit_count);
  out.u64(s.samplers.size());
  for (size_t i = 0; i < s.samplers.size(); ++i) s.sampler(i).write_delta(out);
  write_shard_manifest(out, s);
  return out;
}

std::string sampler_name(const StateImpl& s, size_t index) {
  for (const Entry& e : s.entries) {
    if (e.kind == ValueKind::kSampler && e.index == index) return e.name;
  }
  return "?";
}

// The checks every rank makes on the same gathered bytes, so all reach the same verdict.
std::vector<SamplerCore::Merge> check(const StateImpl& s, std::vector<wire::Reader>& ranks) {
  std::vector<Outcome> outcomes;
  std::vector<uint64_t> counts;
  for (auto& in : ranks) {
    outcomes.push_back(read_outcome(in));
    counts.push_back(in.u64());
    if (in.u64() != s.samplers.size()) throw MismatchError("ranks track different samplers");
  }
  raise_if_failed("commit", outcomes);
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] != s.commit_count) {
      throw MismatchError("commit failed, nothing changed: rank " + std::to_string(r) +
                          " is at commit " + std::to_string(counts[r]) + ", this rank at " +
                          std::to_string(s.commit_count));
    }
  }
  std::vector<SamplerCore::Merge> merges;
  for (size_t i = 0; i < s.samplers.size(); ++i) {
    try {
      merges.push_back(s.sampler(i).check_merge(ranks));
    } catch (const MismatchError& e) {
      throw MismatchError("commit failed, nothing changed: elastic sampler '" + sampler_name(s, i) +
                          "': " + e.what());
    }
  }
  check_shard_manifests(ranks);
  return merges;
}

// Starts the sharded replicas of the next commit and, when they overlap the next step, keeps what
// a sync must go back to if they are lost: the samplers' committed state and the commit count.
void send_replicas_and_keep_previous(StateImpl& s, bool overlap) {
  start_shard_replicas(s, s.commit_count + 1);
  s.previous.reset();
  if (!overlap || !s.has_commit) return;
  StateImpl::Previous previous{s.commit_count, {}};
  for (size_t i = 0; i < s.samplers.size(); ++i) {
    previous.samplers.push_back(s.sampler(i).committed_image());
  }
  s.previous = std::move(previous);
}

}  // namespace

void commit_state(StateImpl& s) {
  s.restored = false;  // the values have been trained on since, even if this commit fails
  settle_shards(s);    // the replicas of the commit before, if they still travel
  std::vector<std::string> staged;
  Outcome local = prepare(s, staged);
  wire::Writer mine = contribution(s, local);
  Gathered all =
      allgather_bytes(s.collective("commit/" + std::to_string(s.commit_count)), mine.bytes());
  std::vector<wire::Reader> ranks(all.ranks.begin(), all.ranks.end());
  std::vector<SamplerCore::Merge> merges;
  try {
    merges = check(s, ranks);
  } catch (const wire::MalformedBytes& e) {
    throw MismatchError(std::string("commit failed, nothing changed: a rank sent bytes that do "
                                    "not parse (") +
                        e.what() + ")");
  }
  // Every rank reached the allgather with its replicas of the commit before settled.
  bool overlap = overlaps(s);
  confirm_shards(s, /*keep_spare=*/overlap);
  // The replicas first: a failure while they start (or, without overlap, travel) leaves every
  // value at the last commit.
  send_replicas_and_keep_previous(s, overlap);
  for (BufferValue& b : s.buffers) b.take_snapshot(overlap);
  if (!overlap) confirm_shards(s, /*keep_spare=*/false);
  for (size_t i = 0; i < s.objects.size(); ++i) {
    s.objects[i].set_snapshot(std::move(staged[i]), overlap);
  }
  for (size_t i = 0; i < s.samplers.size(); ++i) s.sampler(i).apply_merge(merges[i]);
  ++s.commit_count;
  s.has_commit = true;
  if (s.commit_hook) s.commit_hook();
}

}  // namespace cohort::elastic::detail
