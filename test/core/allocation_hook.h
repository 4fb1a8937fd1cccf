// For the tests that watch what code allocates (core.decode: the largest allocation a decoder
// makes; core.send_alloc: that sending allocates nothing): COHORT_SANITIZED, set in the ASan and
// TSan builds, whose runtimes own operator new; and, in the other builds, the global operator new
// and delete replaced so that every allocation first calls `on_allocation(bytes)`, which the test
// that includes this header defines. Include it in exactly one file of a test binary.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COHORT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COHORT_SANITIZED 1
#endif
#endif

// Called before every allocation through operator new (not in sanitizer builds).
void on_allocation(size_t bytes);

#ifndef COHORT_SANITIZED
namespace cohort_test_allocation {
inline void* allocate(size_t n) {
  on_allocation(n);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace cohort_test_allocation

void* operator new(size_t n) {
  return cohort_test_allocation::allocate(n);
}
void* operator new[](size_t n) {
  return cohort_test_allocation::allocate(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
#endif
