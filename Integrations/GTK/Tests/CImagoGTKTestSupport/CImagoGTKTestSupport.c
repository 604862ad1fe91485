#include "CImagoGTKTestSupport.h"
#include "../../Sources/CGTK/ImagoPicture.h"

void *imago_test_picture_from_c(const char *url, int fit) {
    GtkWidget *picture = imago_picture_new();
    g_object_set(picture, "content-fit", (GtkContentFit)fit, "url", url, NULL);
    return picture;
}

char *imago_test_picture_url_from_c(void *picture) {
    char *url = NULL;
    g_object_get(picture, "url", &url, NULL);
    return url;
}

char *imago_test_accessible_label_mismatch(void *widget, const char *label) {
    return gtk_test_accessible_check_property(GTK_ACCESSIBLE(widget), GTK_ACCESSIBLE_PROPERTY_LABEL, label);
}
