#ifndef CIMAGOGTKTESTSUPPORT_H
#define CIMAGOGTKTESTSUPPORT_H

// Plain pointers and ints: this header includes no GTK header, so Swift sees GTK's
// declarations once, from CGTK.

/// An ImagoPicture (a GtkWidget *, floating) made and set up as a C program would:
/// imago_picture_new() and one variadic g_object_set call naming `url` and
/// `content-fit` (a GtkContentFit).
void *imago_test_picture_from_c(const char *url, int fit);

/// The "url" property read back with g_object_get (newly allocated; g_free it).
char *imago_test_picture_url_from_c(void *picture);

/// NULL when the accessible label of `widget` (a GtkWidget *) is `label`, else GTK's
/// description of what it is (g_free it): gtk_test_accessible_check_property is
/// variadic, so Swift cannot call it.
char *imago_test_accessible_label_mismatch(void *widget, const char *label);

#endif
