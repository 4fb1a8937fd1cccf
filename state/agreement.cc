#include "state/agreement.h"

#include "cohort/cohort.h"

namespace cohort::elastic::detail {

Outcome capture(const std::function<void()>& step) {
  try {
    step();
    return {};
  } catch (const InternalError&) {
    throw;
  } catch (const ShutdownError&) {
    throw;
  } catch (const NotInitialized&) {
    throw;
  } catch (const StallError&) {
    throw;
  } catch (const CheckpointError& e) {
    return {ErrorKind::kCheckpoint, e.what()};
  } catch (const MismatchError& e) {
    return {ErrorKind::kMismatch, e.what()};
  } catch (const std::exception& e) {
    return {ErrorKind::kInvalidArgument, e.what()};
  }
}

void write_outcome(wire::Writer& out, const Outcome& outcome) {
  out.u8(static_cast<uint8_t>(outcome.kind));
  out.str(outcome.message);
}

Outcome read_outcome(wire::Reader& in) {
  uint8_t kind = in.u8();
  if (kind > static_cast<uint8_t>(ErrorKind::kCheckpoint)) {
    throw wire::MalformedBytes("bad outcome");
  }
  return {static_cast<ErrorKind>(kind), in.str()};
}

void raise(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kMismatch:
      throw MismatchError(message);
    case ErrorKind::kCheckpoint:
      throw CheckpointError(message);
    default:
      throw InvalidArgument(message);
  }
}

void raise_if_failed(std::string_view what, const std::vector<Outcome>& outcomes) {
  std::string message;
  ErrorKind kind = ErrorKind::kNone;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].ok()) continue;
    if (kind == ErrorKind::kNone) kind = outcomes[r].kind;
    message += (message.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
               outcomes[r].message;
  }
  if (kind != ErrorKind::kNone)
    raise(kind, std::string(what) + " failed, nothing changed: " + message);
}

Gathered allgather_bytes(std::string name, std::span<const std::byte> mine) {
  wire::Writer framed;
  framed.u64(mine.size());
  framed.raw(mine);
  auto& bytes = framed.bytes();
  Gathered out;
  out.data = cohort::allgather(
      name, Tensor{bytes.data(), DataType::kUInt8, {static_cast<int64_t>(bytes.size())}});
  wire::Reader in(std::span<const std::byte>(out.data.bytes));
  try {
    for (int r = 0; r < cohort::size(); ++r) out.ranks.push_back(in.raw(in.u64()));
    if (!in.done()) throw wire::MalformedBytes("bytes left over");
  } catch (const wire::MalformedBytes& e) {
    throw MismatchError("'" + name + "': the gathered contributions do not parse: " + e.what());
  }
  return out;
}

std::vector<std::byte> broadcast_bytes(const std::string& name, std::vector<std::byte> bytes,
                                       int root) {
  int64_t length = static_cast<int64_t>(bytes.size());
  cohort::broadcast(name + "/length", Tensor::of(std::span<int64_t>(&length, 1)), root);
  bytes.resize(static_cast<size_t>(length));
  if (length > 0) {
    cohort::broadcast(name, Tensor{bytes.data(), DataType::kUInt8, {length}}, root);
  }
  return bytes;
}

std::vector<Outcome> gather_outcomes(std::string name, const Outcome& mine) {
  wire::Writer out;
  write_outcome(out, mine);
  Gathered all = allgather_bytes(std::move(name), out.bytes());
  std::vector<Outcome> outcomes;
  for (auto bytes : all.ranks) {
    wire::Reader in(bytes);
    try {
      outcomes.push_back(read_outcome(in));
    } catch (const wire::MalformedBytes&) {
      outcomes.push_back({ErrorKind::kMismatch, "sent an outcome that does not parse"});
    }
  }
  return outcomes;
}

}  // namespace cohort::elastic::detail
