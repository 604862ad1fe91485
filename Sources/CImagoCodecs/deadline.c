#ifdef __linux__
#include "CImagoCodecs.h"

#include <time.h>

int imago_deadline_passed(uint64_t deadline) {
    if (deadline == 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec >= deadline;
}
#endif
