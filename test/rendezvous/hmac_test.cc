#include <catch2/catch.hpp>

#include "cohort/errors.h"
#include "rendezvous/hmac.h"

using namespace cohort::rendezvous;

TEST_CASE("HMAC-SHA256 matches RFC 4231") {
  // Test case 1.
  CHECK(to_hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2.
  CHECK(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("hex round trip and errors") {
  std::string bytes = random_bytes(kSecretSize);
  CHECK(bytes.size() == 32);
  CHECK(from_hex(to_hex(bytes)) == bytes);
  CHECK(from_hex("00FFab") == std::string("\x00\xff\xab", 3));
  CHECK_THROWS_AS(from_hex("abc"), cohort::InvalidArgument);
  CHECK_THROWS_AS(from_hex("zz"), cohort::InvalidArgument);
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
}
