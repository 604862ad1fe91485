/*
 * The decode limit of `imago bench`: libjpeg-turbo's TurboJPEG API called directly,
 * with nothing around it.
 *
 *     tj_decode [--runs N] [--max-side PX] DIR|FILE...
 *
 * With --max-side, each file is decoded at the smallest TurboJPEG scale (1/8 … 1)
 * whose result still covers the image fitted within PX × PX: the least a thumbnail
 * decode can cost before its final resample, as Imago's JPEG decoder chooses it.
 * Reads every file (every *.jpg of a DIR) into memory first, then decodes them all on
 * N threads (N = online cores), each taking the next file from a shared atomic index:
 * tjDecompressHeader3, then tjDecompress2 to TJPF_RGBA into a malloc'd buffer that is
 * freed at once, default flags (accurate integer DCT, fancy upsampling). One untimed
 * pass warms the process up; each of the N timed passes prints
 *
 *     seconds=0.912345 files=300 threads=2
 *
 * Exit status 1 when any file fails to decode (a fatal TurboJPEG error), 2 on bad usage.
 *
 * Build: gcc -O2 -o tj_decode tj_decode.c -lturbojpeg -lpthread
 */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

struct file {
    unsigned char *data;
    unsigned long size;
};

static struct file *files;
static size_t file_count, file_capacity;
static atomic_size_t next_file;
static atomic_int failures;
static int max_side;

/* The scaled size of a width × height image for a thumbnail of at most `max_side`. */
static void scaled_size(int *width, int *height) {
    if (max_side <= 0 || (*width <= max_side && *height <= max_side)) return;
    double fit = (double)max_side / (*width > *height ? *width : *height);
    int fitted_w = (int)(*width * fit + 0.5), fitted_h = (int)(*height * fit + 0.5);
    int count = 0;
    tjscalingfactor *factors = tjGetScalingFactors(&count);
    int best_w = *width, best_h = *height;
    for (int f = 0; f < count; f++) {
        if (factors[f].num > factors[f].denom) continue;
        int w = TJSCALED(*width, factors[f]), h = TJSCALED(*height, factors[f]);
        if (w >= fitted_w && h >= fitted_h && w < best_w) { best_w = w; best_h = h; }
    }
    *width = best_w;
    *height = best_h;
}

static void add_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) { perror(path); exit(2); }
    fclose(f);
    if (file_count == file_capacity) {
        file_capacity = file_capacity ? file_capacity * 2 : 64;
        files = realloc(files, file_capacity * sizeof *files);
        if (!files) { perror("realloc"); exit(2); }
    }
    files[file_count++] = (struct file){data, (unsigned long)size};
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds every *.jpg in `dir`, in name order. */
static void add_directory(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) { perror(dir); exit(2); }
    char **names = NULL;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        size_t length = strlen(entry->d_name);
        if (length < 5 || strcmp(entry->d_name + length - 4, ".jpg") != 0) continue;
        names = realloc(names, (count + 1) * sizeof *names);
        if (!names || asprintf(&names[count], "%s/%s", dir, entry->d_name) < 0) { perror("alloc"); exit(2); }
        count++;
    }
    closedir(d);
    qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; i++) {
        add_file(names[i]);
        free(names[i]);
    }
    free(names);
}

static void *decode_files(void *unused) {
    (void)unused;
    tjhandle tj = tjInitDecompress();
    if (!tj) { fprintf(stderr, "tjInitDecompress: %s\n", tjGetErrorStr2(NULL)); exit(1); }
    size_t i;
    while ((i = atomic_fetch_add(&next_file, 1)) < file_count) {
        int width, height, subsampling, colorspace;
        if (tjDecompressHeader3(tj, files[i].data, files[i].size, &width, &height, &subsampling, &colorspace) != 0
            || width <= 0 || height <= 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        scaled_size(&width, &height);
        unsigned char *pixels = malloc((size_t)width * (size_t)height * 4);
        if (!pixels) { perror("malloc"); exit(1); }
        /* tjDecompress2 returns -1 for warnings too; only a fatal error is a failure. */
        if (tjDecompress2(tj, files[i].data, files[i].size, pixels, width, 0, height, TJPF_RGBA, 0) != 0
            && tjGetErrorCode(tj) == TJERR_FATAL) {
            atomic_fetch_add(&failures, 1);
        }
        free(pixels);
    }
    tjDestroy(tj);
    return NULL;
}

/* Seconds to decode every file on `threads` threads. */
static double decode_all(int threads) {
    pthread_t ids[threads];
    struct timespec start, end;
    atomic_store(&next_file, 0);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, decode_files, NULL);
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
}

int main(int argc, char **argv) {
    int runs = 1;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--runs") == 0 && a + 1 < argc) {
            runs = atoi(argv[++a]);
            continue;
        }
        if (strcmp(argv[a], "--max-side") == 0 && a + 1 < argc) {
            max_side = atoi(argv[++a]);
            continue;
        }
        struct stat st;
        if (stat(argv[a], &st) != 0) { perror(argv[a]); return 2; }
        if (S_ISDIR(st.st_mode)) add_directory(argv[a]); else add_file(argv[a]);
    }
    if (file_count == 0 || runs < 1) {
        fprintf(stderr, "usage: tj_decode [--runs N] [--max-side PX] DIR|FILE...   (no JPEG files given)\n");
        return 2;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores > 0 ? (int)cores : 1;

    decode_all(threads);
    for (int r = 0; r < runs; r++) {
        double seconds = decode_all(threads);
        printf("seconds=%.6f files=%zu threads=%d\n", seconds, file_count, threads);
        fflush(stdout);
    }
    if (atomic_load(&failures) > 0) {
        fprintf(stderr, "tj_decode: %d decodes failed\n", atomic_load(&failures));
        return 1;
    }
    return 0;
}
