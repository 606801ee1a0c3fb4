/* Replays files through the fuzz target (fuzz_hw.c) in builds without libFuzzer, so the corpus
 * and the bad-input cases run under every compiler: each file whole, then cut short at a
 * spread of lengths (what a half-written file looks like). Directories are walked, sorted.
 *   fuzz_hw_replay PATH...   (exit 0; a broken invariant aborts) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CUTS 24 /* truncations per file */

static int files;

static void replay_file(const char *path)
{
    char *text = NULL;
    gsize len = 0;
    GError *err = NULL;
    if (!g_file_get_contents(path, &text, &len, &err)) {
        fprintf(stderr, "fuzz_hw_replay: %s\n", err->message);
        g_error_free(err);
        return;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)text, len);
    for (gsize k = 0; k < CUTS && len > 0; k++)
        LLVMFuzzerTestOneInput((const uint8_t *)text, len * k / CUTS);
    files++;
    g_free(text);
}

static int cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay(const char *path)
{
    if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
        replay_file(path);
        return;
    }
    GDir *d = g_dir_open(path, 0, NULL);
    if (!d)
        return;
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        g_ptr_array_add(names, g_build_filename(path, n, NULL));
    g_dir_close(d);
    g_ptr_array_sort(names, cmp);
    for (guint i = 0; i < names->len; i++)
        replay(g_ptr_array_index(names, i));
    g_ptr_array_free(names, TRUE);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        replay(argv[i]);
    printf("fuzz_hw_replay: %d files replayed\n", files);
    return files > 0 ? 0 : 1;
}
