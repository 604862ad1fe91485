#include <gtk/gtk.h>
#include <glib-unix.h>
#include "ImagoPicture.h"
