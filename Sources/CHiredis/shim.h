// hiredis's blocking client for the shared cache tier. Its variadic redisCommand
// cannot be called from Swift; the tier uses the argv forms only.
#include <sys/time.h>
#include <hiredis/hiredis.h>
