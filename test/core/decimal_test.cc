// The one parser of decimal integers (base/decimal.h) and the host names and ports built on it
// (base/host_port.h): the grammar as a table, the hints, and env::parse_integer's messages.
#include "base/decimal.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "base/env_value.h"
#include "base/host_port.h"
#include "cohort/errors.h"

using namespace cohort;

TEST_CASE("decimal: the grammar, as a table") {
  struct Row {
    const char* text;
    std::optional<long long> as_whole;   // parse_decimal<long long>(text, 0, 1000)
    std::optional<long long> as_signed;  // parse_decimal<long long>(text, -1000, 1000)
  };
  const Row rows[] = {
      {"0", 0, 0},
      {"7", 7, 7},
      {"1000", 1000, 1000},
      {"-7", std::nullopt, -7},
      {"-1000", std::nullopt, -1000},
      {"1001", std::nullopt, std::nullopt},   // out of bounds
      {"-1001", std::nullopt, std::nullopt},  // out of bounds
      {"007", std::nullopt, std::nullopt},    // leading zeros
      {"00", std::nullopt, std::nullopt},
      {"-07", std::nullopt, std::nullopt},
      {"-0", std::nullopt, std::nullopt},  // 0 has no sign
      {"+7", std::nullopt, std::nullopt},
      {" 7", std::nullopt, std::nullopt},
      {"7 ", std::nullopt, std::nullopt},
      {"\t7", std::nullopt, std::nullopt},
      {"7\n", std::nullopt, std::nullopt},
      {"", std::nullopt, std::nullopt},
      {"-", std::nullopt, std::nullopt},
      {"+", std::nullopt, std::nullopt},
      {"0x7", std::nullopt, std::nullopt},
      {"7.0", std::nullopt, std::nullopt},
      {"1e3", std::nullopt, std::nullopt},
      {"1_000", std::nullopt, std::nullopt},
      {"1,000", std::nullopt, std::nullopt},
      {"7a", std::nullopt, std::nullopt},
      {"--7", std::nullopt, std::nullopt},
      {"\xd9\xa7", std::nullopt, std::nullopt},  // ARABIC-INDIC DIGIT SEVEN
  };
  for (const auto& row : rows) {
    INFO("'" << row.text << "'");
    CHECK(parse_decimal<long long>(row.text, 0, 1000) == row.as_whole);
    CHECK(parse_decimal<long long>(row.text, -1000, 1000) == row.as_signed);
  }
}

TEST_CASE("decimal: range-checked into the caller's type") {
  CHECK(parse_decimal<int>("2147483647") == std::numeric_limits<int>::max());
  CHECK(parse_decimal<int>("-2147483648") == std::numeric_limits<int>::min());
  CHECK_FALSE(parse_decimal<int>("2147483648"));
  CHECK_FALSE(parse_decimal<int>("-2147483649"));
  CHECK(parse_decimal<uint64_t>("18446744073709551615") == std::numeric_limits<uint64_t>::max());
  CHECK_FALSE(parse_decimal<uint64_t>("18446744073709551616"));
  CHECK_FALSE(parse_decimal<uint64_t>("-1"));
  CHECK(parse_decimal<int64_t>("-9223372036854775808") == std::numeric_limits<int64_t>::min());
  CHECK_FALSE(parse_decimal<uint8_t>("256"));
  CHECK(whole_number("0") == 0);
  CHECK(whole_number("2147483647") == std::numeric_limits<int>::max());
  CHECK_FALSE(whole_number("-1"));
  CHECK_FALSE(whole_number("01"));
}

TEST_CASE("decimal: a number spelt another way says how to write it") {
  struct Row {
    const char* text;
    long long lo, hi;
    const char* hint;
  };
  const Row rows[] = {
      {"007", 0, 9, "write 7, without leading zeros"},
      {"+7", 0, 9, "write 7, without a '+' sign"},
      {" 7", 0, 9, "write 7, without spaces"},
      {"7\n", 0, 9, "write 7, without spaces"},
      {"-0", 0, 9, "write 0, without a sign"},
      {"-00", -9, 9, "write 0, without leading zeros"},
      {"-07", -9, 9, "write -7, without leading zeros"},
      {" +007 ", 0, 9, "write 7, without spaces"},  // the first of what it has
      {"-07", 0, 9, ""},                            // negative: no spelling helps
      {"070", 0, 9, ""},                            // 70 is out of bounds anyway
      {"7", 0, 9, ""},                              // spelt right
      {"10", 0, 9, ""},                             // spelt right, out of bounds
      {"0x7", 0, 9, ""},
      {"seven", 0, 9, ""},
  };
  for (const auto& row : rows) {
    INFO("'" << row.text << "'");
    CHECK(decimal_hint(std::string_view(row.text), row.lo, row.hi) == row.hint);
  }
  CHECK(decimal_refusal(std::string_view("007"), 0, 9) ==
        "'007' is not a whole number from 0 to 9 (write 7, without leading zeros)");
  CHECK(decimal_refusal(std::string_view("x"), -60, 60) == "'x' is not an integer from -60 to 60");
}

TEST_CASE("decimal: COHORT_* integers refuse what the old parser took, naming the value") {
  using cohort::env::parse_integer;
  CHECK(parse_integer("N", "16", 0, 100) == 16);
  CHECK(parse_integer("N", "-5", -10, 10) == -5);
  struct Row {
    const char* value;
    const char* message;
  };
  const Row rows[] = {
      {"016",
       "N='016' is invalid: expected a whole number from 0 to 100 (write 16, without "
       "leading zeros)"},
      {"+16",
       "N='+16' is invalid: expected a whole number from 0 to 100 (write 16, without a "
       "'+' sign)"},
      {" 16",
       "N=' 16' is invalid: expected a whole number from 0 to 100 (write 16, without "
       "spaces)"},
      {"0x10", "N='0x10' is invalid: expected a whole number from 0 to 100"},
      {"101", "N='101' is invalid: expected a whole number from 0 to 100"},
      {"lots", "N='lots' is invalid: expected a whole number from 0 to 100"},
  };
  for (const auto& row : rows) {
    INFO(row.value);
    CHECK_THROWS_WITH(parse_integer("N", row.value, 0, 100), row.message);
  }
}

TEST_CASE("host names and ports: one rule for flags, variables, files and URLs") {
  for (const char* good : {"a", "node-1", "pi-worker-0.pi.default.svc", "10.0.0.7", "a_b"}) {
    CHECK(net::valid_host_name(good));
  }
  for (const char* bad : {"", "-a", ".a", "a b", "a:1", "[::1]", "::1", "a/b", "a@b", "é"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(net::valid_host_name(bad));
  }
  CHECK_FALSE(net::valid_host_name(std::string(254, 'a')));
  CHECK(net::valid_host_name(std::string(253, 'a')));
  CHECK(net::parse_port("1") == 1);
  CHECK(net::parse_port("65535") == 65535);
  for (const char* bad : {"0", "65536", "99999", "022", "+22", " 22", "", "0x16", "-1"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(net::parse_port(bad));
  }
}
