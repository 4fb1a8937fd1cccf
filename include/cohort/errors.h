// The exceptions Cohort raises. Every error a caller can see derives from cohort::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace cohort {

// The base of every exception Cohort raises.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument or environment value; nothing was changed.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Called before init(), after shutdown(), or twice where once is allowed.
class NotInitialized : public Error {
 public:
  using Error::Error;
};

// The ranks disagreed about a collective (shape, dtype, op, root, ...). Raised on every rank that
// submitted the tensor; the runtime keeps running.
class MismatchError : public Error {
 public:
  using Error::Error;
};

// The communication layer failed (a peer died, a connection broke, a timeout). The runtime that
// raised it is no longer usable; elastic::run recovers from it by resetting.
class InternalError : public Error {
 public:
  using Error::Error;
};

// Committed state that no rank holds any more: a range of a sharded State value whose rank and
// every replica of it are gone. Raised on every rank by State::sync(); elastic::run does not
// retry it (another round would find the same), so it ends run().
class StateLostError : public InternalError {
 public:
  using InternalError::InternalError;
};

// Some ranks submitted the collective and others did not within COHORT_STALL_SHUTDOWN_TIME_SECONDS.
// Raised on every rank that submitted it; the runtime keeps running.
class StallError : public Error {
 public:
  using Error::Error;
};

// The runtime shut down before the request could complete.
class ShutdownError : public Error {
 public:
  using Error::Error;
};

// A checkpoint could not be written (disk full, permission, ...) or no checkpoint could be loaded
// into the tracked values. Raised on every rank; the previous checkpoint stays loadable.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

// The store through which processes meet (the launcher's rendezvous server, etcd) could not be
// reached in the time a request had: connection refused or reset, no answer in time, no etcd
// member with a leader. The one error that code waiting out an outage retries; any other Error
// of a store (a refused or malformed answer, a bad argument) is a fault to report at once.
class StoreUnreachable : public Error {
 public:
  using Error::Error;
};

}  // namespace cohort
