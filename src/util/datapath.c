/* datapath.c: find a data file in the places a user would expect it. */
#include "config.h"   /* PG_SOURCE_DIR, from configure */
#include "util/datapath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest path this module builds (the executable's, a data directory's). */
#define DATAPATH_MAX 4096
/* Where Linux exposes the running executable. */
#define SELF_EXE_LINK "/proc/self/exe"

static int is_regular_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* dir/relpath into out if it exists; 0 on success. */
static int try_under(const char *dir, const char *relpath, char *out, size_t len)
{
    if (!dir || !*dir)
        return -1;
    int n = snprintf(out, len, "%s/%s", dir, relpath);
    if (n < 0 || (size_t)n >= len)
        return -1;
    return is_regular_file(out) ? 0 : -1;
}

#if defined(PG_BIN_DIR) && defined(PG_DATA_DIR)
/* The data directory of an installed binary, or "" for one run from its
 * build tree.  The binary is installed when it lives in PG_BIN_DIR, possibly
 * under a staging root (`make install DESTDIR=ROOT` puts it in ROOT/PG_BIN_DIR);
 * its data is then in the same root's PG_DATA_DIR.  Looked up once. */
static const char *installed_data_dir(void)
{
    static char dir[DATAPATH_MAX];
    static int done;
    if (done)
        return dir;
    done = 1;
    char exe[DATAPATH_MAX];
    ssize_t n = readlink(SELF_EXE_LINK, exe, sizeof exe - 1);
    if (n <= 0)
        return dir;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return dir;
    *slash = '\0';   /* exe is now the binary's directory */
    size_t len = strlen(exe), blen = strlen(PG_BIN_DIR);
    if (len < blen || strcmp(exe + len - blen, PG_BIN_DIR) != 0)
        return dir;
    int w = snprintf(dir, sizeof dir, "%.*s%s", (int)(len - blen), exe, PG_DATA_DIR);
    if (w < 0 || (size_t)w >= sizeof dir)
        dir[0] = '\0';
    return dir;
}
#endif

int datapath_find(const char *relpath, char *out, size_t len)
{
    if (!relpath || !*relpath || !out || len == 0)
        return -1;
    if (is_regular_file(relpath)) {
        if (strlen(relpath) >= len)
            return -1;
        memcpy(out, relpath, strlen(relpath) + 1);
        return 0;
    }
    if (relpath[0] == '/')
        return -1;
    if (try_under(getenv(PG_DATA_DIR_ENV), relpath, out, len) == 0)
        return 0;
#if defined(PG_BIN_DIR) && defined(PG_DATA_DIR)
    /* An installed binary reads its installed data only: falling back to the
     * source tree it was built from would hide a file `make install` left out. */
    const char *installed = installed_data_dir();
    if (installed[0]) {
        if (try_under(installed, relpath, out, len) == 0)
            return 0;
        out[0] = '\0';
        return -1;
    }
#endif
#ifdef PG_SOURCE_DIR
    if (try_under(PG_SOURCE_DIR, relpath, out, len) == 0)
        return 0;
#endif
#ifdef PG_DATA_DIR
    if (try_under(PG_DATA_DIR, relpath, out, len) == 0)
        return 0;
#endif
    out[0] = '\0';
    return -1;
}
