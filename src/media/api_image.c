/* The public og_images, og_image_processor and og_named_tensors functions. */
#include "media/processor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct og_images {
    size_t count;
    media_image *images; /* [count] */
};

struct og_named_tensors {
    media_outputs o;
};

struct og_image_processor {
    media_processor *p;
};

/* A bound on images per call: each is decoded whole before preprocessing. */
#define MAX_IMAGES 1024

static og_status *images_new(size_t count, og_images **out) {
    if (!out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_images: NULL argument");
    if (count == 0 || count > MAX_IMAGES)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_images: %zu images (1 to %d)", count,
                         MAX_IMAGES);
    og_images *im = calloc(1, sizeof *im);
    if (im) im->images = calloc(count, sizeof *im->images);
    if (!im || !im->images) {
        free(im);
        return og_oom();
    }
    *out = im;
    return NULL;
}

og_status *og_images_open(const char *const *paths, size_t count, og_images **out) {
    og_images *im = NULL;
    if (!paths) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_images_open: NULL paths");
    OG_TRY(images_new(count, &im));
    for (size_t i = 0; i < count; i++) {
        og_status *st = paths[i] ? media_image_read(paths[i], &im->images[i])
                                 : og_errorf(OG_ERR_INVALID_ARGUMENT, "og_images_open: path %zu "
                                             "is NULL", i);
        if (st) {
            og_images_free(im);
            return st;
        }
        im->count = i + 1;
    }
    *out = im;
    return NULL;
}

og_status *og_images_load(const void *const *data, const size_t *sizes, size_t count,
                          og_images **out) {
    og_images *im = NULL;
    if (!data || !sizes) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_images_load: NULL data");
    OG_TRY(images_new(count, &im));
    for (size_t i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "image %zu (in memory)", i);
        og_status *st = media_image_decode(data[i], sizes[i], name, &im->images[i]);
        if (st) {
            og_images_free(im);
            return st;
        }
        im->count = i + 1;
    }
    *out = im;
    return NULL;
}

void og_images_free(og_images *images) {
    if (!images) return;
    for (size_t i = 0; i < images->count; i++) media_image_free(&images->images[i]);
    free(images->images);
    free(images);
}

size_t og_images_count(const og_images *images) { return images ? images->count : 0; }

const uint8_t *og_images_pixels(const og_images *images, size_t index, int *width,
                                int *height) {
    if (!images || index >= images->count) return NULL;
    if (width) *width = images->images[index].width;
    if (height) *height = images->images[index].height;
    return images->images[index].rgb;
}

size_t og_named_tensors_count(const og_named_tensors *t) { return t ? (size_t)t->o.count : 0; }

const char *og_named_tensors_name(const og_named_tensors *t, size_t index) {
    return t && index < (size_t)t->o.count ? t->o.names[index] : NULL;
}

og_tensor *og_named_tensors_at(const og_named_tensors *t, size_t index) {
    return t && index < (size_t)t->o.count ? t->o.tensors[index] : NULL;
}

og_tensor *og_named_tensors_find(const og_named_tensors *t, const char *name) {
    for (int i = 0; t && name && i < t->o.count; i++)
        if (strcmp(t->o.names[i], name) == 0) return t->o.tensors[i];
    return NULL;
}

void og_named_tensors_free(og_named_tensors *t) {
    if (!t) return;
    media_outputs_free(&t->o);
    free(t);
}

og_status *og_image_processor_open(const char *path, og_image_processor **out) {
    if (!out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_image_processor_open: NULL out");
    og_image_processor *p = calloc(1, sizeof *p);
    if (!p) return og_oom();
    og_status *st = media_processor_open(path, &p->p);
    if (st) {
        free(p);
        return st;
    }
    *out = p;
    return NULL;
}

void og_image_processor_free(og_image_processor *p) {
    if (!p) return;
    media_processor_free(p->p);
    free(p);
}

const char *og_image_processor_name(const og_image_processor *p) {
    return p ? media_processor_name(p->p) : "";
}

og_status *og_image_processor_process(const og_image_processor *p, const og_images *images,
                                      og_named_tensors **out) {
    if (!p || !images || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_image_processor_process: NULL argument");
    og_named_tensors *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    og_status *st = media_processor_run(p->p, images->images, images->count, &t->o);
    if (st) {
        free(t);
        return st;
    }
    *out = t;
    return NULL;
}
