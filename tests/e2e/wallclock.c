/* Moves the wall clock of a process (CLOCK_REALTIME, and gettimeofday and time, which read it)
 * by WALLCLOCK_OFFSET_SECONDS, as on a machine whose date was set wrong: monotonic clocks,
 * sleeps and timed waits are left as they are. Loaded with LD_PRELOAD by tests/e2e/test_replica_clock.py.
 *
 * Debian's libfaketime does not fit a Python process: with its monotonic clock moved too,
 * threading's timed waits (sem_clockwait) never end; with it left alone
 * (FAKETIME_DONT_FAKE_MONOTONIC=1), time.sleep fails with EINVAL.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static long offset_seconds;

__attribute__((constructor)) static void init(void) {
    const char *offset = getenv("WALLCLOCK_OFFSET_SECONDS");
    offset_seconds = offset ? atol(offset) : 0;
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
}

int clock_gettime(clockid_t clock, struct timespec *now) {
    int failed = real_clock_gettime(clock, now);
    if (!failed && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        now->tv_sec += offset_seconds;
    }
    return failed;
}

int gettimeofday(struct timeval *restrict now, void *restrict zone) {
    struct timespec precise;
    (void)zone;
    if (clock_gettime(CLOCK_REALTIME, &precise)) {
        return -1;
    }
    now->tv_sec = precise.tv_sec;
    now->tv_usec = precise.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *now) {
    struct timespec precise;
    clock_gettime(CLOCK_REALTIME, &precise);
    if (now) {
        *now = precise.tv_sec;
    }
    return precise.tv_sec;
}
