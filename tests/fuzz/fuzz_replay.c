/* fuzz_replay.c: runs the fuzz harness over files, without libFuzzer.
 *
 * With arguments, each is a file to replay (a crash reproducer, say); with
 * none, every file of $srcdir/tests/fuzz/corpus (the build's source tree
 * when $srcdir is unset).  Built and run by the
 * normal suite so the harness and its corpus never rot. */
#include "config.h" /* PG_SOURCE_DIR: the corpus when $srcdir is unset */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each harness's replay program may name its own corpus (-DFUZZ_CORPUS_SUBDIR). */
#ifdef FUZZ_CORPUS_SUBDIR
#define CORPUS_SUBDIR FUZZ_CORPUS_SUBDIR
#else
#define CORPUS_SUBDIR "tests/fuzz/corpus"
#endif
#define MAX_INPUT_BYTES (1 << 20)

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    uint8_t *buf = malloc(MAX_INPUT_BYTES);
    size_t n = fread(buf, 1, MAX_INPUT_BYTES, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0, count = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++, count++)
            failed |= replay(argv[i]);
    } else {
        const char *srcdir = getenv("srcdir");
#ifdef PG_SOURCE_DIR
        if (!srcdir)
            srcdir = PG_SOURCE_DIR;
#endif
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", srcdir ? srcdir : ".", CORPUS_SUBDIR);
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "fuzz_replay: cannot open %s\n", dir);
            return 1;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            failed |= replay(path);
            count++;
        }
        closedir(d);
        if (count == 0) {
            fprintf(stderr, "fuzz_replay: empty corpus %s\n", dir);
            return 1;
        }
    }
    printf("fuzz_replay: %d inputs replayed\n", count);
    return failed;
}
