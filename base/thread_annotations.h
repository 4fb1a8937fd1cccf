// Clang's thread-safety annotations (-Wthread-safety), as macros that are empty for other
// compilers: what a mutex guards (GUARDED_BY), what a function needs held (REQUIRES) or must not
// hold (EXCLUDES), and which functions take and give back a lock (ACQUIRE, RELEASE). Used with
// the annotated Mutex of base/mutex.h: libstdc++'s std::mutex carries no annotations, so clang
// could check nothing about it. The clang build with COHORT_THREAD_SAFETY=ON checks them all
// (docs/thread-safety.md).
#pragma once

#if defined(__clang__)
#define COHORT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define COHORT_THREAD_ANNOTATION(x)
#endif

// A class that is a lock (Mutex); `x` names its kind in messages.
#define CAPABILITY(x) COHORT_THREAD_ANNOTATION(capability(x))
// An RAII class that holds a lock for its lifetime (MutexLock).
#define SCOPED_CAPABILITY COHORT_THREAD_ANNOTATION(scoped_lockable)
// A member or global read or written only with `x` held.
#define GUARDED_BY(x) COHORT_THREAD_ANNOTATION(guarded_by(x))
// A pointer whose pointee is read or written only with `x` held.
#define PT_GUARDED_BY(x) COHORT_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock order: this lock is taken after (before) those.
#define ACQUIRED_AFTER(...) COHORT_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) COHORT_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// The caller holds (does not hold) these locks.
#define REQUIRES(...) COHORT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) COHORT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function takes (gives back) these locks, or the object's own when none is named.
#define ACQUIRE(...) COHORT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) COHORT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) COHORT_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The function checks at run time that the lock is held; the analysis takes it as held after.
#define ASSERT_CAPABILITY(x) COHORT_THREAD_ANNOTATION(assert_capability(x))
// The function returns a reference to this lock.
#define RETURN_CAPABILITY(x) COHORT_THREAD_ANNOTATION(lock_returned(x))
// Not checked: for the rare function whose locking the analysis cannot follow (say why there).
#define NO_THREAD_SAFETY_ANALYSIS COHORT_THREAD_ANNOTATION(no_thread_safety_analysis)
