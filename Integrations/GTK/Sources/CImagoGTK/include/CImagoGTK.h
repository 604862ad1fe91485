#ifndef CIMAGOGTK_H
#define CIMAGOGTK_H

/// Makes the GLib main loop run the jobs of libdispatch's main queue, where Swift's
/// main actor puts its work on Linux. Without it, a program whose main thread sits in
/// GTK's loop never runs a main-actor job. Call on the main thread; returns the GLib
/// source id (0 if the queue has no handle). Calling again does nothing.
unsigned int imago_gtk_attach_main_queue(void);

/// Runs the main queue's pending jobs now: for a caller that iterates GLib itself and
/// wants no wake-up to be missed.
void imago_gtk_drain_main_queue(void);

#endif
