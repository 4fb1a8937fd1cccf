// What a worker keeps so that a failure costs only the work since the last commit: named values
// registered by the program, snapshotted in memory by commit(), put back by restore(), and made
// equal on every rank by sync().
//
//   cohort::elastic::State state;
//   state.track("model", weights);          // std::vector<float>: memcpy commit, broadcast sync
//   state.track("adam.m", moments);         // as many named buffers as needed
//   state.track("epoch", epoch);            // any cereal-serializable value: bytes commit
//   state.track("sampler", sampler);        // ElasticSampler: processed sets merged at commit
//   state.sync();                           // everyone starts from rank 0's values
//   ... train; every k steps: state.commit();
//   ... on a failure: state.restore(); rebuild the runtime; state.run_reset_callbacks();
//   state.sync();
//
// Tracked values are referenced, not copied: the program keeps them alive, in place, for the
// State's lifetime. Every rank tracks the same names, kinds, types and sizes in the same order.
//
// commit() and sync() are collective: every rank calls them at the same point of the program.
// restore() is local. A call that fails on any rank with bad input throws on every rank and
// changes no value anywhere. A State is used from one thread at a time. See docs/state.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/details/traits.hpp>

#include "cohort/elastic/elements.h"
#include "cohort/elastic/sampler.h"
#include "cohort/elastic/sharded.h"
#include "cohort/types.h"

namespace cohort::elastic {

// Whether a tracked value is the same on every rank that holds the same commit. kPerRank (the
// default): it may differ, and sync() always sends the root's. kSameOnEveryRank: it cannot differ
// (a data-parallel model's parameters, an optimizer's state fed averaged gradients), so a sync in
// which every rank restored the commit it syncs to (elastic::run after a failure of some ranks:
// restore(), the reset callbacks, sync()) sends none of it and each rank keeps its own as it is:
// between restore() and that sync() the program may change such a value only as every rank does.
enum class ValueScope : uint8_t { kPerRank, kSameOnEveryRank };

namespace detail {
struct StateImpl;
struct StateAccess;

// How State reaches a tracked serializable object without knowing its type.
struct ObjectAccess {
  std::string type_name;
  ValueScope scope = ValueScope::kPerRank;
  // Serializes the object as it is now.
  std::function<std::string()> save;
  // Parses bytes into a new value (throwing if they do not parse, or leave bytes over) and
  // returns the function that moves it into the tracked object.
  std::function<std::function<void()>(std::string_view)> load;
};

// A read-only stream buffer over bytes, so parsing does not copy them.
class ByteSource : public std::streambuf {
 public:
  explicit ByteSource(std::string_view bytes) {
    char* p = const_cast<char*>(bytes.data());
    setg(p, p, p + bytes.size());
  }
  bool consumed() const { return gptr() == egptr(); }
};

template <typename T>
ObjectAccess object_access(T& object) {
  ObjectAccess access;
  access.type_name = typeid(T).name();
  access.save = [&object] {
    std::ostringstream out(std::ios::binary);
    {
      cereal::BinaryOutputArchive archive(out);
      archive(object);
    }
    return std::move(out).str();
  };
  access.load = [&object](std::string_view bytes) -> std::function<void()> {
    auto value = std::make_shared<T>();
    ByteSource source(bytes);
    std::istream in(&source);
    {
      cereal::BinaryInputArchive archive(in);
      archive(*value);
    }
    if (!source.consumed()) throw std::length_error("bytes left over after the value");
    return [&object, value] { object = std::move(*value); };
  };
  return access;
}

template <typename T>
inline constexpr bool is_span_v = false;
template <typename T, size_t N>
inline constexpr bool is_span_v<std::span<T, N>> = true;
template <typename T>
inline constexpr bool is_buffer_vector_v = false;
template <BufferElement T>
requires(!std::same_as<T, bool>) inline constexpr bool is_buffer_vector_v<std::vector<T>> = true;

// Anything tracked through cereal: not a buffer, not a sampler.
template <typename T>
concept SerializableObject =
    !is_span_v<T> && !is_buffer_vector_v<T> && !std::same_as<T, ElasticSampler> &&
    !std::is_const_v<T> && !std::derived_from<T, ShardStorage>;
}  // namespace detail

// Named values that survive a failure (how to use them: the top of state.h).
class State {
 public:
  // `label` tells States apart in collective names; two States with the same label must not
  // commit or sync at the same time.
  explicit State(std::string label = "state");
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // A contiguous numeric buffer: commit copies it into a snapshot allocated here (so commit is one
  // memcpy), restore copies it back, sync broadcasts it (see ValueScope for `scope`). Its size is
  // fixed from now on: commit, restore and sync throw InvalidArgument if a tracked vector has been
  // resized.
  template <detail::BufferElement T>
  requires(!std::same_as<T, bool>) void track(std::string name, std::vector<T>& values,
                                              ValueScope scope = ValueScope::kPerRank) {
    std::vector<T>* v = &values;
    track_buffer(
        std::move(name), data_type_of<T>(), [v] { return std::as_writable_bytes(std::span(*v)); },
        scope);
  }
  // Any contiguous numeric range, as for a vector (bool included).
  template <detail::BufferElement T>
  void track(std::string name, std::span<T> values, ValueScope scope = ValueScope::kPerRank) {
    track_buffer(
        std::move(name), data_type_of<T>(), [values] { return std::as_writable_bytes(values); },
        scope);
  }
  // The elastic sampler: commit merges every rank's recorded samples, restore drops this rank's
  // uncommitted ones, sync adopts rank 0's and repartitions over the current world.
  void track(std::string name, ElasticSampler& sampler);
  // A sharded buffer (cohort/elastic/sharded.h): commit snapshots this rank's range and sends it
  // to COHORT_STATE_REPLICAS other ranks while the next step runs (the next commit confirms that
  // every copy arrived; COHORT_STATE_OVERLAP_DISABLE=1: commit waits for them); restore puts this
  // rank's range back; sync gives every rank its range in the current world, from the newest
  // commit whose every range some rank holds (the one before, if a failure lost the last one's
  // replicas on their way), moving only the bytes whose holder changed. A range that no rank
  // holds any more is a StateLostError (an InternalError) on every rank, naming it.
  void track(std::string name, detail::ShardStorage& buffer);
  // Any other value, through cereal's binary archive: commit serializes it, restore and sync parse
  // bytes into a new T and move-assign it (T must be default-constructible and move-assignable).
  template <detail::SerializableObject T>
  void track(std::string name, T& object) {
    static_assert(cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value &&
                      cereal::traits::is_input_serializable<T, cereal::BinaryInputArchive>::value,
                  "State::track: this type is not cereal-serializable (give it a serialize "
                  "function, or track a std::vector / std::span of numbers)");
    track_object(std::move(name), detail::object_access(object));
  }

  // A value the program serializes itself, for values whose size changes or that cereal cannot
  // reach (a framework's optimizer state, created lazily). `save` returns the value's bytes as
  // they are now; `parse` checks bytes and returns the function that moves them into the value,
  // so a failure on any rank (parse throws) changes nothing anywhere. `type_tag` names the kind
  // of value in sync checks and checkpoints: ranks and checkpoints must agree on it. `scope`: see
  // ValueScope (kSameOnEveryRank only where the program guarantees it).
  void track_bytes(std::string name, std::string type_tag, std::function<std::string()> save,
                   std::function<std::function<void()>(std::string_view)> parse,
                   ValueScope scope = ValueScope::kPerRank);

  // Collective. Snapshots every value in memory and merges the samplers' processed sets (one
  // allgather), then runs the commit hook. Throws on every rank, committing nothing, if any rank
  // has bad input (a resized buffer, a failing serializer, ranks out of step).
  void commit();
  // Local. Returns every value to the last commit (or sync) and drops the samplers' uncommitted
  // records. Throws InvalidArgument, changing nothing, if there was no commit, a value was tracked
  // after it, or a buffer was resized.
  void restore();
  // Collective. Makes every rank's values equal to those of the rank with the newest commit (the
  // lowest such rank: rank 0 unless a failure cut a commit short on some ranks, or rank 0 has
  // never committed), reshards the sharded values from the copies of that commit, repartitions
  // the samplers over the current world, and takes that as this rank's last commit (restore
  // returns to it). Works after the world changed (new ranks with fresh values). Throws on every
  // rank, changing nothing, if the ranks track different names/kinds/types/sizes, or if any rank
  // has uncommitted sampler records (commit or restore first). Values of ValueScope
  // kSameOnEveryRank are not sent when every rank restored that commit since its last commit or
  // sync (and tracked nothing new): each keeps its own.
  void sync();

  // Callbacks for a change of world (e.g. scale the learning rate); run_reset_callbacks() runs
  // them in registration order. elastic::run calls it after rebuilding the runtime, before sync().
  void add_reset_callback(std::function<void()> callback);
  // Runs the reset callbacks, in the order they were added.
  void run_reset_callbacks();
  // Called by commit() on every rank once the commit is complete (elastic::run uses it to check
  // for host updates, which may throw). Replaces any previous hook; an empty function removes it.
  void set_commit_hook(std::function<void()> hook);

  // The label given to the constructor.
  const std::string& label() const;
  // Successful commits so far (agreed by sync and loaded from checkpoints).
  uint64_t commit_count() const;
  // Samples committed by the elastic samplers so far, all epochs: for each sampler, epoch() times
  // its dataset size plus this epoch's committed samples (for the launcher's metrics).
  uint64_t samples_committed() const;
  // Whether there is a commit or sync to restore to.
  bool has_commit() const;
  // Bytes of sharded values this rank received from other ranks in its last sync: the ranges it
  // took over after a change of world (0 when none changed holder; replicas not counted).
  uint64_t last_reshard_bytes() const;
  // The values of ValueScope kSameOnEveryRank the last sync left as each rank held them, in
  // tracking order (empty when it sent every value).
  const std::vector<std::string>& last_sync_kept() const;
  // Tracked names, in tracking order.
  std::vector<std::string> names() const;

 private:
  friend struct detail::StateAccess;
  void track_buffer(std::string name, DataType dtype, std::function<std::span<std::byte>()> view,
                    ValueScope scope);
  void track_object(std::string name, detail::ObjectAccess access);
  std::unique_ptr<detail::StateImpl> impl_;
};

}  // namespace cohort::elastic
