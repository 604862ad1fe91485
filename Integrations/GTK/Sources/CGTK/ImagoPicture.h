#ifndef IMAGO_PICTURE_H
#define IMAGO_PICTURE_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

/// ImagoPicture: a GTK 4 widget that shows the image at a URL, loaded, cached and
/// decoded at the widget's size by Imago. The type is registered from C so that
/// GtkBuilder, GObject properties and every language binding see an ordinary widget;
/// what it does is Imago's Swift code, which `ImagoPicture.register()` (Swift) installs
/// once. Register before the first `.ui` file naming it is parsed.
///
/// Properties: "url" (string), "content-fit" (GtkContentFit, "contain" by default),
/// "alternative-text" (string, the accessible label), "placeholder-icon-name" (string)
/// and "placeholder-paintable" (GdkPaintable), shown while there is no image.
/// Signal: "load-failed" (void handler(ImagoPicture *, const char *message, gpointer)),
/// emitted when a load fails, with Imago's sentence saying why.
#define IMAGO_TYPE_PICTURE (imago_picture_get_type())
G_DECLARE_FINAL_TYPE(ImagoPicture, imago_picture, IMAGO, PICTURE, GtkWidget)

/// A new picture showing nothing (a floating reference, as every new widget).
GtkWidget *imago_picture_new(void);
/// Loads `url` (NULL shows the placeholder and loads nothing): the "url" property.
void imago_picture_set_url(ImagoPicture *self, const char *url);
/// The "url" property; owned by the picture.
const char *imago_picture_get_url(ImagoPicture *self);
/// How the image fills the widget: the "content-fit" property.
void imago_picture_set_content_fit(ImagoPicture *self, GtkContentFit fit);
/// The "content-fit" property.
GtkContentFit imago_picture_get_content_fit(ImagoPicture *self);
/// The accessible label: the "alternative-text" property.
void imago_picture_set_alternative_text(ImagoPicture *self, const char *text);
/// The "alternative-text" property; owned by the picture.
const char *imago_picture_get_alternative_text(ImagoPicture *self);
/// The icon shown while there is no image: the "placeholder-icon-name" property.
void imago_picture_set_placeholder_icon_name(ImagoPicture *self, const char *name);
/// The "placeholder-icon-name" property; owned by the picture.
const char *imago_picture_get_placeholder_icon_name(ImagoPicture *self);
/// The paintable shown while there is no image, before any icon: the
/// "placeholder-paintable" property.
void imago_picture_set_placeholder_paintable(ImagoPicture *self, GdkPaintable *paintable);
/// The "placeholder-paintable" property; owned by the picture.
GdkPaintable *imago_picture_get_placeholder_paintable(ImagoPicture *self);

/// The picture's properties, numbered as `ImagoPictureBehaviour.property_changed` hears them.
typedef enum {
    IMAGO_PICTURE_PROP_URL = 1,
    IMAGO_PICTURE_PROP_CONTENT_FIT,
    IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT,
    IMAGO_PICTURE_PROP_PLACEHOLDER_ICON_NAME,
    IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE,
} ImagoPictureProperty;

// What follows is ImagoGTK's own: the bridge between the type and its Swift side.

/// What the widget does, in Swift: installed once, before the first picture is made.
/// `state` is the picture's Swift state, made by `init` and released by `dispose`.
typedef struct {
    void *(*init)(ImagoPicture *self);
    void (*dispose)(ImagoPicture *self, void *state);
    void (*property_changed)(void *state, ImagoPictureProperty property);
    void (*measure)(void *state, GtkOrientation orientation, int for_size, int *minimum, int *natural);
    void (*size_allocate)(void *state, int width, int height);
    void (*snapshot)(void *state, GtkSnapshot *snapshot);
    void (*mapping_changed)(void *state, gboolean mapped);
} ImagoPictureBehaviour;

/// Installs the picture's behaviour (the first call only) and registers the type;
/// returns the type.
GType imago_picture_install(const ImagoPictureBehaviour *behaviour);
/// The Swift state of a picture, or NULL once it is disposed.
void *imago_picture_get_state(ImagoPicture *self);
/// Emits "load-failed" with `message`.
void imago_picture_emit_load_failed(ImagoPicture *self, const char *message);
/// Tells listeners of "notify::url" of a change made by the picture itself (a load
/// started from Swift), without starting another load.
void imago_picture_store_url(ImagoPicture *self, const char *url);

G_END_DECLS

#endif
