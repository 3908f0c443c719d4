/* datapath.c: find a data file in the places a user would expect it. */
#include "config.h"   /* PG_SOURCE_DIR, from configure */
#include "util/datapath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
