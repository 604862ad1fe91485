// The GObject side of ImagoPicture: type registration, properties, and the virtual
// functions GTK calls, each handed on to the Swift behaviour installed once.
#include "../CGTK/ImagoPicture.h"

struct _ImagoPicture {
    GtkWidget parent_instance;
    void *state;
    char *url;
    GtkContentFit content_fit;
    char *alternative_text;
    char *placeholder_icon_name;
    GdkPaintable *placeholder_paintable;
};

G_DEFINE_FINAL_TYPE(ImagoPicture, imago_picture, GTK_TYPE_WIDGET)

static ImagoPictureBehaviour behaviour;
static gboolean installed;
static GParamSpec *properties[IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE + 1];
static guint load_failed;

GType imago_picture_install(const ImagoPictureBehaviour *given) {
    if (!installed) {
        behaviour = *given;
        installed = TRUE;
    }
    return imago_picture_get_type();
}

void *imago_picture_get_state(ImagoPicture *self) {
    return self->state;
}

static void imago_picture_init(ImagoPicture *self) {
    self->content_fit = GTK_CONTENT_FIT_CONTAIN;
    if (installed) {
        self->state = behaviour.init(self);
    } else {
        g_critical("ImagoPicture made before ImagoPicture.register(): it will show nothing");
    }
}

static void imago_picture_dispose(GObject *object) {
    ImagoPicture *self = IMAGO_PICTURE(object);
    void *state = self->state;
    self->state = NULL;
    if (state) behaviour.dispose(self, state);
    g_clear_object(&self->placeholder_paintable);
    G_OBJECT_CLASS(imago_picture_parent_class)->dispose(object);
}

static void imago_picture_finalize(GObject *object) {
    ImagoPicture *self = IMAGO_PICTURE(object);
    g_free(self->url);
    g_free(self->alternative_text);
    g_free(self->placeholder_icon_name);
    G_OBJECT_CLASS(imago_picture_parent_class)->finalize(object);
}

static void changed(ImagoPicture *self, ImagoPictureProperty property) {
    g_object_notify_by_pspec(G_OBJECT(self), properties[property]);
    if (self->state) behaviour.property_changed(self->state, property);
}

/// Replaces a string property; FALSE when it already had that value.
static gboolean replace(char **field, const char *value) {
    if (g_strcmp0(*field, value) == 0) return FALSE;
    g_free(*field);
    *field = g_strdup(value);
    return TRUE;
}

static void imago_picture_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    ImagoPicture *self = IMAGO_PICTURE(object);
    switch (id) {
    case IMAGO_PICTURE_PROP_URL: imago_picture_set_url(self, g_value_get_string(value)); break;
    case IMAGO_PICTURE_PROP_CONTENT_FIT: imago_picture_set_content_fit(self, g_value_get_enum(value)); break;
    case IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT: imago_picture_set_alternative_text(self, g_value_get_string(value)); break;
    case IMAGO_PICTURE_PROP_PLACEHOLDER_ICON_NAME: imago_picture_set_placeholder_icon_name(self, g_value_get_string(value)); break;
    case IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE: imago_picture_set_placeholder_paintable(self, g_value_get_object(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void imago_picture_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    ImagoPicture *self = IMAGO_PICTURE(object);
    switch (id) {
    case IMAGO_PICTURE_PROP_URL: g_value_set_string(value, self->url); break;
    case IMAGO_PICTURE_PROP_CONTENT_FIT: g_value_set_enum(value, self->content_fit); break;
    case IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT: g_value_set_string(value, self->alternative_text); break;
    case IMAGO_PICTURE_PROP_PLACEHOLDER_ICON_NAME: g_value_set_string(value, self->placeholder_icon_name); break;
    case IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE: g_value_set_object(value, self->placeholder_paintable); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void imago_picture_measure(GtkWidget *widget, GtkOrientation orientation, int for_size,
                                  int *minimum, int *natural, int *minimum_baseline, int *natural_baseline) {
    ImagoPicture *self = IMAGO_PICTURE(widget);
    *minimum = *natural = 0;
    *minimum_baseline = *natural_baseline = -1;
    if (self->state) behaviour.measure(self->state, orientation, for_size, minimum, natural);
}

static void imago_picture_size_allocate(GtkWidget *widget, int width, int height, int baseline) {
    (void)baseline;
    ImagoPicture *self = IMAGO_PICTURE(widget);
    if (self->state) behaviour.size_allocate(self->state, width, height);
}

static void imago_picture_snapshot(GtkWidget *widget, GtkSnapshot *snapshot) {
    ImagoPicture *self = IMAGO_PICTURE(widget);
    if (self->state) behaviour.snapshot(self->state, snapshot);
}

static void imago_picture_map(GtkWidget *widget) {
    GTK_WIDGET_CLASS(imago_picture_parent_class)->map(widget);
    ImagoPicture *self = IMAGO_PICTURE(widget);
    if (self->state) behaviour.mapping_changed(self->state, TRUE);
}

static void imago_picture_unmap(GtkWidget *widget) {
    ImagoPicture *self = IMAGO_PICTURE(widget);
    if (self->state) behaviour.mapping_changed(self->state, FALSE);
    GTK_WIDGET_CLASS(imago_picture_parent_class)->unmap(widget);
}

static void imago_picture_class_init(ImagoPictureClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = imago_picture_dispose;
    object_class->finalize = imago_picture_finalize;
    object_class->set_property = imago_picture_set_property;
    object_class->get_property = imago_picture_get_property;
    widget_class->measure = imago_picture_measure;
    widget_class->size_allocate = imago_picture_size_allocate;
    widget_class->snapshot = imago_picture_snapshot;
    widget_class->map = imago_picture_map;
    widget_class->unmap = imago_picture_unmap;

    GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
    properties[IMAGO_PICTURE_PROP_URL] = g_param_spec_string(
        "url", "URL", "The URL of the image shown", NULL, flags);
    properties[IMAGO_PICTURE_PROP_CONTENT_FIT] = g_param_spec_enum(
        "content-fit", "Content fit", "How the image fills the widget",
        GTK_TYPE_CONTENT_FIT, GTK_CONTENT_FIT_CONTAIN, flags);
    properties[IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT] = g_param_spec_string(
        "alternative-text", "Alternative text", "What the image shows, for assistive technologies", NULL, flags);
    properties[IMAGO_PICTURE_PROP_PLACEHOLDER_ICON_NAME] = g_param_spec_string(
        "placeholder-icon-name", "Placeholder icon name", "The icon shown while there is no image", NULL, flags);
    properties[IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE] = g_param_spec_object(
        "placeholder-paintable", "Placeholder paintable", "What is shown while there is no image",
        GDK_TYPE_PAINTABLE, flags);
    g_object_class_install_properties(object_class, G_N_ELEMENTS(properties), properties);
    load_failed = g_signal_new("load-failed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                               G_TYPE_NONE, 1, G_TYPE_STRING);

    gtk_widget_class_set_css_name(widget_class, "imago-picture");
    gtk_widget_class_set_accessible_role(widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

GtkWidget *imago_picture_new(void) {
    return g_object_new(IMAGO_TYPE_PICTURE, NULL);
}

void imago_picture_set_url(ImagoPicture *self, const char *url) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (replace(&self->url, url)) changed(self, IMAGO_PICTURE_PROP_URL);
}

void imago_picture_store_url(ImagoPicture *self, const char *url) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (replace(&self->url, url)) g_object_notify_by_pspec(G_OBJECT(self), properties[IMAGO_PICTURE_PROP_URL]);
}

void imago_picture_emit_load_failed(ImagoPicture *self, const char *message) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    g_signal_emit(self, load_failed, 0, message);
}

const char *imago_picture_get_url(ImagoPicture *self) {
    g_return_val_if_fail(IMAGO_IS_PICTURE(self), NULL);
    return self->url;
}

void imago_picture_set_content_fit(ImagoPicture *self, GtkContentFit fit) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (self->content_fit == fit) return;
    self->content_fit = fit;
    changed(self, IMAGO_PICTURE_PROP_CONTENT_FIT);
}

GtkContentFit imago_picture_get_content_fit(ImagoPicture *self) {
    g_return_val_if_fail(IMAGO_IS_PICTURE(self), GTK_CONTENT_FIT_CONTAIN);
    return self->content_fit;
}

void imago_picture_set_alternative_text(ImagoPicture *self, const char *text) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (replace(&self->alternative_text, text)) changed(self, IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT);
}

const char *imago_picture_get_alternative_text(ImagoPicture *self) {
    g_return_val_if_fail(IMAGO_IS_PICTURE(self), NULL);
    return self->alternative_text;
}

void imago_picture_set_placeholder_icon_name(ImagoPicture *self, const char *name) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (replace(&self->placeholder_icon_name, name)) changed(self, IMAGO_PICTURE_PROP_PLACEHOLDER_ICON_NAME);
}

const char *imago_picture_get_placeholder_icon_name(ImagoPicture *self) {
    g_return_val_if_fail(IMAGO_IS_PICTURE(self), NULL);
    return self->placeholder_icon_name;
}

void imago_picture_set_placeholder_paintable(ImagoPicture *self, GdkPaintable *paintable) {
    g_return_if_fail(IMAGO_IS_PICTURE(self));
    if (g_set_object(&self->placeholder_paintable, paintable)) changed(self, IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE);
}

GdkPaintable *imago_picture_get_placeholder_paintable(ImagoPicture *self) {
    g_return_val_if_fail(IMAGO_IS_PICTURE(self), NULL);
    return self->placeholder_paintable;
}
