#include <gtk/gtk.h>
#include <glib-unix.h>
#include "ImagoPicture.h"
// glibc's malloc tuning (mallopt, malloc_trim), which Swift's Glibc module leaves out:
// a GTK program decoding on many threads keeps its heap in check with them.
#include <malloc.h>
