// What a thread does in each turn of a short spin, waiting for another core: tells the processor
// it spins, so that it saves power and yields the core's resources to a sibling hyperthread.
#pragma once

namespace cohort {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace cohort
