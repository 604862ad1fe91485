// The Linux calls the memory-pressure watcher makes that the Swift Glibc module
// leaves out, because glibc declares them only under _GNU_SOURCE and the module is
// built without it: eventfd, gettid and pthread_setname_np; and mallopt, whose header
// the module does not include, for the imago tool's allocator settings.
#define _GNU_SOURCE
#include <sys/eventfd.h>
#include <unistd.h>
#include <pthread.h>
#include <malloc.h>

// gettid has a glibc wrapper only since 2.30; before, the system call is made
// directly, which Swift cannot do itself since syscall() is variadic.
#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 30)
#include <sys/syscall.h>
static inline pid_t gettid(void) { return (pid_t)syscall(SYS_gettid); }
#endif
