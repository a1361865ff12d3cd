// Tests/tools/tsan-mutex.c: makes Synchronization.Mutex's contended paths visible to ThreadSanitizer.
// scripts/tsan.sh builds it as a shared library and LD_PRELOADs it into the TSan test bundle.
//
// On Linux a Mutex's uncontended lock and unlock are atomics inlined into camrec, which TSan sees. A
// contended one goes through _MutexHandle._lockSlow/_unlockSlow in libswiftSynchronization.so, which
// is not instrumented: it spins on plain atomics, then hands the lock over with FUTEX_LOCK_PI and
// FUTEX_UNLOCK_PI, and the kernel writes the owner. TSan sees no happens-before edge, so two accesses
// under one lock on two threads were reported as races now and then (JPEGFeed.ask, StreamChunkPool,
// SharedFrameRelease, 2026-11-27/28). These definitions interpose on the library's three slow paths
// (the executable calls them through the PLT, so a preloaded definition wins), call the real ones,
// and tell TSan what they did: an acquire on the lock word after a lock, a release before an unlock,
// the same edges a pthread mutex's interceptors give it.
//
// Swift passes `self` (here the address of the lock word, _MutexHandle's only stored property) in
// r13: clang's swiftcall convention puts a swift_context parameter there (LLVM's swiftself). Checked against the
// library's code: `mov 0x0(%r13),%eax; lock cmpxchg %edi,0x0(%r13)` in _lockSlow (Swift 6.3, x86_64).
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void __tsan_acquire(void *address);
void __tsan_release(void *address);

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFTCALL void (*LockSlow)(uint32_t threadID, void *SWIFT_SELF word);
typedef SWIFTCALL _Bool (*TryLockSlow)(void *SWIFT_SELF word);
typedef SWIFTCALL void (*UnlockSlow)(void *SWIFT_SELF word);

static void *real(const char *name) {
    void *function = dlsym(RTLD_NEXT, name);
    if (!function) {
        fprintf(stderr, "tsan-mutex: libswiftSynchronization has no %s (another Swift?): %s\n", name, dlerror());
        abort();
    }
    return function;
}

SWIFTCALL void lockSlow(uint32_t threadID, void *SWIFT_SELF word) __asm__(LOCK_SLOW);
SWIFTCALL void lockSlow(uint32_t threadID, void *SWIFT_SELF word) {
    static LockSlow next;
    if (!next) next = (LockSlow)real(LOCK_SLOW);
    next(threadID, word);
    __tsan_acquire(word);
}

SWIFTCALL _Bool tryLockSlow(void *SWIFT_SELF word) __asm__(TRY_LOCK_SLOW);
SWIFTCALL _Bool tryLockSlow(void *SWIFT_SELF word) {
    static TryLockSlow next;
    if (!next) next = (TryLockSlow)real(TRY_LOCK_SLOW);
    _Bool locked = next(word);
    if (locked) __tsan_acquire(word);
    return locked;
}

SWIFTCALL void unlockSlow(void *SWIFT_SELF word) __asm__(UNLOCK_SLOW);
SWIFTCALL void unlockSlow(void *SWIFT_SELF word) {
    static UnlockSlow next;
    if (!next) next = (UnlockSlow)real(UNLOCK_SLOW);
    __tsan_release(word);
    next(word);
}

