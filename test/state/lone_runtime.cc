// The State tests run in a world of one: the real runtime, started without a launcher. Each test
// calls cohort::init() (a no-op once initialized); this listener shuts it down once at the end.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include "cohort/cohort.h"

namespace {

struct ShutdownAtEnd : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats&) override { cohort::shutdown(); }
};

}  // namespace

CATCH_REGISTER_LISTENER(ShutdownAtEnd)
