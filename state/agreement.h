// How the ranks agree on the outcome of a collective state operation: each rank's local checks
// become an Outcome, the outcomes travel in one collective, and every rank raises the same error
// (or none). Also the byte-moving collectives the state layer builds on.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/wire.h"
#include "cohort/types.h"

namespace cohort::elastic::detail {

enum class ErrorKind : uint8_t { kNone, kInvalidArgument, kMismatch, kCheckpoint };

struct Outcome {
  ErrorKind kind = ErrorKind::kNone;
  std::string message;
  bool ok() const { return kind == ErrorKind::kNone; }
};

// Runs `step`; the errors bad input raises (cohort's InvalidArgument, MismatchError,
// CheckpointError, and any std::exception from user code such as a serializer) become the
// Outcome. Runtime failures (InternalError, ShutdownError, ...) propagate.
Outcome capture(const std::function<void()>& step);

void write_outcome(wire::Writer& out, const Outcome& outcome);
Outcome read_outcome(wire::Reader& in);

[[noreturn]] void raise(ErrorKind kind, const std::string& message);
// Throws on every rank alike when any outcome failed: the error type of the lowest failing rank,
// with every failing rank's message, prefixed by `what`.
void raise_if_failed(std::string_view what, const std::vector<Outcome>& outcomes);

// Every rank's bytes, in rank order (spans into `data`).
struct Gathered {
  OwnedTensor data;
  std::vector<std::span<const std::byte>> ranks;
};
Gathered allgather_bytes(std::string name, std::span<const std::byte> mine);
// Root's bytes on every rank (two broadcasts: the length, then the bytes).
std::vector<std::byte> broadcast_bytes(const std::string& name, std::vector<std::byte> bytes,
                                       int root);
// Every rank's outcome, in rank order (one allgather).
std::vector<Outcome> gather_outcomes(std::string name, const Outcome& mine);

}  // namespace cohort::elastic::detail
