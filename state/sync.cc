// State::sync(): the ranks gather what each holds (state/shard_sync.h) and take as the root the
// rank with the newest commit; the root broadcasts its manifest, objects and sampler headers, and
// every rank checks them against its own and the outcomes are agreed; then buffers and processed
// sets are broadcast in place, sharded values resharded, and every rank takes the result as its
// last commit. Values of ValueScope kSameOnEveryRank are neither sent nor snapshotted again when
// every rank has just restored the same commit: each already holds them.
#include "cohort/cohort.h"
#include "state/agreement.h"
#include "state/shard_sync.h"
#include "state/state_impl.h"

namespace cohort::elastic::detail {
namespace {

// Whether this sync leaves `value` (a buffer or an object) as each rank holds it (ValueScope,
// SyncSource::kept_everywhere).
template <typename Value>
bool kept(const Value& value, const SyncSource& source) {
  return source.kept_everywhere && value.scope() == ValueScope::kSameOnEveryRank;
}

// The root's side: everything but the buffers and bitmaps (and the objects every rank keeps).
// Its first byte is 0 if it could not be made (the root's outcome then says why).
std::vector<std::byte> root_blob(const StateImpl& s, const SyncSource& source, Outcome& outcome) {
  wire::Writer out;
  outcome = capture([&] {
    wire::Writer body, manifest = s.manifest();
    body.str(std::string_view(reinterpret_cast<const char*>(manifest.bytes().data()),
                              manifest.bytes().size()));
    body.u64(s.commit_count);
    for (const ObjectValue& o : s.objects) {
      if (kept(o, source)) continue;
      try {
        body.str(o.save());
      } catch (const std::exception& e) {
        throw InvalidArgument("value '" + o.name() + "' failed to serialize: " + e.what());
      }
    }
    for (size_t i = 0; i < s.samplers.size(); ++i) {
      wire::Writer header;
      s.sampler(i).write_sync_header(header);
      body.u64(header.bytes().size());
      body.raw(header.bytes());
    }
    out.u8(1);
    out.raw(body.bytes());
  });
  if (!outcome.ok()) out.u8(0);
  return std::move(out.bytes());
}

struct RootState {
  bool valid = false;
  std::string manifest;
  uint64_t commit_count = 0;
  std::vector<std::string> objects;  // empty for each object every rank keeps
  std::vector<std::span<const std::byte>> sampler_headers;
};

RootState parse_root(const StateImpl& s, const SyncSource& source,
                     std::span<const std::byte> blob) {
  wire::Reader in(blob);
  RootState root;
  root.valid = in.u8() == 1;
  if (!root.valid) return root;
  root.manifest = in.str();
  root.commit_count = in.u64();
  for (const ObjectValue& o : s.objects) root.objects.push_back(kept(o, source) ? "" : in.str());
  for (size_t i = 0; i < s.samplers.size(); ++i) root.sampler_headers.push_back(in.raw(in.u64()));
  if (!in.done()) throw wire::MalformedBytes("bytes left over");
  return root;
}

// This rank's checks of rank 0's state against its own; stages rank 0's objects.
void check_local(const StateImpl& s, bool discard_uncommitted, std::span<const std::byte> blob,
                 const SyncSource& source, RootState& root,
                 std::vector<std::function<void()>>& assign) {
  const int root_rank = source.root;
  for (const BufferValue& b : s.buffers) b.live();
  for (size_t i = 0; i < s.samplers.size() && !discard_uncommitted; ++i) {
    if (uint64_t n = s.sampler(i).uncommitted(); n > 0) {
      throw InvalidArgument("the elastic sampler has " + std::to_string(n) +
                            " uncommitted records here: commit() or restore() before sync()");
    }
  }
  try {
    root = parse_root(s, source, blob);
  } catch (const wire::MalformedBytes& e) {
    throw MismatchError("rank " + std::to_string(root_rank) +
                        "'s state does not parse: " + e.what());
  }
  if (!root.valid || cohort::rank() == root_rank) return;
  std::string who = "rank " + std::to_string(root_rank);
  auto manifest = std::as_bytes(std::span(root.manifest.data(), root.manifest.size()));
  if (std::string diff = manifest_difference(s, manifest, who); !diff.empty()) {
    throw MismatchError(diff);
  }
  for (size_t i = 0; i < s.objects.size(); ++i) {
    if (kept(s.objects[i], source)) continue;
    assign.push_back(s.objects[i].parse(root.objects[i], who + "'s value"));
  }
}

void broadcast_values(StateImpl& s, const SyncSource& source) {
  const int root = source.root;
  for (const Entry& e : s.entries) {
    if (e.kind == ValueKind::kBuffer) {
      BufferValue& b = s.buffers[e.index];
      std::span<std::byte> bytes = b.live();
      if (bytes.empty() || kept(b, source)) continue;
      auto count = static_cast<int64_t>(bytes.size() / element_size(b.dtype()));
      cohort::broadcast(s.collective("sync/buffer/" + e.name),
                        Tensor{bytes.data(), b.dtype(), {count}}, root);
    } else if (e.kind == ValueKind::kSampler) {
      std::span<uint64_t> words = s.sampler(e.index).bitmap_words();
      cohort::broadcast(
          s.collective("sync/sampler/" + e.name),
          Tensor{words.data(), DataType::kInt64, {static_cast<int64_t>(words.size())}}, root);
    }
  }
}

// Every buffer and object takes what it now holds as its snapshot, but those the sync kept: their
// snapshot is already the commit restored (the names go to StateImpl::kept_by_last_sync).
void take_snapshots(StateImpl& s, const SyncSource& source, RootState& root) {
  s.kept_by_last_sync.clear();
  for (const Entry& e : s.entries) {
    if (e.kind == ValueKind::kBuffer) {
      BufferValue& b = s.buffers[e.index];
      if (!kept(b, source)) {
        b.take_snapshot();
        continue;
      }
      b.keep_snapshot();
    } else if (e.kind == ValueKind::kObject) {
      ObjectValue& o = s.objects[e.index];
      if (!kept(o, source)) {
        o.set_snapshot(std::move(root.objects[e.index]));
        continue;
      }
      o.keep_snapshot();
    } else {
      continue;
    }
    s.kept_by_last_sync.push_back(e.name);
  }
}

}  // namespace

void sync_state(StateImpl& s, bool discard_uncommitted, bool rank_zero, bool shards_loaded) {
  check_shards(s);
  SyncSource source = plan_sync(s, rank_zero, shards_loaded);
  Outcome root_outcome;
  std::vector<std::byte> blob;
  if (cohort::rank() == source.root) {
    // The root goes back to the generation the plans are from before it describes its state.
    root_outcome = capture([&] {
      if (source.step_back) step_back_state(s);
    });
    blob = root_outcome.ok() ? root_blob(s, source, root_outcome)
                             : std::vector<std::byte>{std::byte{0}};
  }
  blob = broadcast_bytes(s.collective("sync/state"), std::move(blob), source.root);

  RootState root;
  std::vector<std::function<void()>> assign;
  Outcome local =
      root_outcome.ok()
          ? capture([&] { check_local(s, discard_uncommitted, blob, source, root, assign); })
          : root_outcome;
  raise_if_failed("sync", gather_outcomes(s.collective("sync/outcome"), local));

  broadcast_values(s, source);
  reshard_shards(s, source, root.commit_count);
  for (auto& a : assign) a();
  take_snapshots(s, source, root);
  for (size_t i = 0; i < s.samplers.size(); ++i) {
    wire::Reader header(root.sampler_headers[i]);
    s.sampler(i).adopt(header, cohort::rank(), cohort::size());
  }
  s.commit_count = root.commit_count;
  s.has_commit = true;
  s.previous.reset();
}

}  // namespace cohort::elastic::detail

namespace cohort::elastic::detail {

void agree_on_manifest(StateImpl& s, std::string_view what) {
  wire::Writer manifest = s.manifest();
  std::string name = s.collective(std::string(what) + "/manifest");
  std::vector<std::byte> root = broadcast_bytes(
      name, cohort::rank() == 0 ? std::move(manifest.bytes()) : std::vector<std::byte>{}, 0);
  Outcome local = capture([&] {
    if (cohort::rank() == 0) return;
    if (std::string diff = manifest_difference(s, root, "rank 0"); !diff.empty()) {
      throw MismatchError(diff);
    }
  });
  raise_if_failed(what, gather_outcomes(name + "/outcome", local));
}

}  // namespace cohort::elastic::detail
