// Names of unnamed collectives: counted per kind, and counted again from 0 by every new runtime,
// so that after an elastic reset survivors and new workers name their unnamed calls alike.
#include <catch2/catch.hpp>

#include "cohort/cohort.h"
#include "core/default_names.h"

TEST_CASE("default names count per kind") {
  cohort::DefaultNames names;
  CHECK(names.next("allreduce") == "allreduce.noname.0");
  CHECK(names.next("allreduce") == "allreduce.noname.1");
  CHECK(names.next("allgather") == "allgather.noname.0");
  CHECK(names.next("allreduce") == "allreduce.noname.2");
}

TEST_CASE("default names start again with a new runtime, and need one") {
  CHECK_THROWS_AS(cohort::default_name("allreduce"), cohort::NotInitialized);
  cohort::init();
  CHECK(cohort::default_name("allreduce") == "allreduce.noname.0");
  CHECK(cohort::default_name("allreduce") == "allreduce.noname.1");
  cohort::shutdown();
  cohort::init();
  CHECK(cohort::default_name("allreduce") == "allreduce.noname.0");
  cohort::shutdown();
}
