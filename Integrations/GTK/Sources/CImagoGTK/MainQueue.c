#include "CImagoGTK.h"
#include <glib-unix.h>
#include <sys/eventfd.h>

// libdispatch exports these for CoreFoundation's run loop, which wakes on the
// main queue's eventfd and then drains the queue; no header declares them.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

static guint attached;

static gboolean drain(gint fd, GIOCondition condition, gpointer data) {
    (void)condition;
    (void)data;
    // Read first: a job queued while draining writes the eventfd again, so no wake-up
    // is lost.
    eventfd_t value;
    (void)eventfd_read(fd, &value);
    _dispatch_main_queue_callback_4CF(NULL);
    return G_SOURCE_CONTINUE;
}

unsigned int imago_gtk_attach_main_queue(void) {
    if (attached) return attached;
    int fd = _dispatch_get_main_queue_handle_4CF();
    if (fd < 0) return 0;
    attached = g_unix_fd_add(fd, G_IO_IN, drain, NULL);
    return attached;
}

void imago_gtk_drain_main_queue(void) {
    _dispatch_main_queue_callback_4CF(NULL);
}
