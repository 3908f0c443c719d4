/* outfile.c: whole output files by rename, locked appended files
 * (outfile.h). */
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkstemp's template tail: six characters it replaces. */
#define TMP_SUFFIX ".tmpXXXXXX"
/* Mode of a newly created output before the umask, as fopen(path, "w")
 * would give it (mkstemp creates 0600). */
#define NEW_FILE_MODE 0666

static void outfile_zero(pg_outfile *o)
{
    memset(o, 0, sizeof *o);
}

/* The mode fopen would create a file with: NEW_FILE_MODE less the umask
 * (read by setting it back at once; pipegrid is single-threaded here). */
static mode_t new_file_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return (mode_t)(NEW_FILE_MODE & ~mask);
}

int pg_outfile_open(pg_outfile *o, const char *path, const char *option, pg_status *st)
{
    outfile_zero(o);
    struct stat sb;
    int in_place = lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
    if (in_place) {
        o->f = fopen(path, "w");
        if (!o->f)
            return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 0}, option, "cannot open for writing: %s",
                              strerror(errno));
        o->path = pg_xstrdup(path);
        return 0;
    }
    size_t n = strlen(path);
    char *tmp = pg_xmalloc(n + sizeof TMP_SUFFIX);
    memcpy(tmp, path, n);
    memcpy(tmp + n, TMP_SUFFIX, sizeof TMP_SUFFIX);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 0}, option, "cannot open for writing: %s",
                          strerror(e));
    }
    /* an existing file keeps its mode; a new one gets fopen's */
    mode_t mode = lstat(path, &sb) == 0 ? (sb.st_mode & 07777) : new_file_mode();
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return pg_fail_at(st, PG_EXIT_INTERNAL, (pg_origin){path, 0}, option, "cannot open for writing: %s",
                          strerror(e));
    }
    o->path = pg_xstrdup(path);
    o->tmp_path = tmp;
    return 0;
}

void pg_outfile_discard(pg_outfile *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp_path)
        unlink(o->tmp_path);
    free(o->path);
    free(o->tmp_path);
    outfile_zero(o);
}

int pg_outfile_commit(pg_outfile *o, int already_failed, pg_status *st)
{
    if (!o->f) {
        outfile_zero(o);
        return 0;
    }
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    if (fclose(o->f) != 0 && !e)
        e = errno;
    o->f = NULL;
    if (!e && already_failed)
        e = EIO;
    if (!e && o->tmp_path && rename(o->tmp_path, o->path) != 0)
        e = errno;
    int rc = 0;
    if (e) {
        rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: cannot write: %s", o->path, strerror(e));
        pg_outfile_discard(o);   /* removes the temporary file */
        return rc;
    }
    free(o->path);
    free(o->tmp_path);
    outfile_zero(o);
    return 0;
}

/* The files this process holds a lock on, by device and inode, so a forked
 * child can close its copy of each (a child holding it would keep the lock
 * after the writer died).  A closed and reused descriptor number no longer
 * matches and is left alone. */
#define MAX_LOCKED_FILES 4
typedef struct locked_file {
    int fd;
    dev_t dev;
    ino_t ino;
} locked_file;
static locked_file locked[MAX_LOCKED_FILES];
static int nlocked;

static void close_locked_in_child(void)
{
    for (int i = 0; i < nlocked; i++) {
        struct stat sb;
        if (fstat(locked[i].fd, &sb) == 0 && sb.st_dev == locked[i].dev && sb.st_ino == locked[i].ino)
            close(locked[i].fd);
    }
    nlocked = 0;
}

int pg_lock_output(int fd, const char *path, const char *what, pg_status *st)
{
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return pg_fail(st, PG_EXIT_INTERNAL,
                           "%s: another pipegrid is writing this file (%s); wait for it to finish or "
                           "write another file",
                           path, what);
        /* a file system without locks: write unlocked rather than not at all */
        if (errno != ENOLCK && errno != EOPNOTSUPP && errno != EINVAL)
            return pg_fail(st, PG_EXIT_INTERNAL, "%s: cannot lock: %s", path, strerror(errno));
        return 0;
    }
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, close_locked_in_child);
        registered = 1;
    }
    struct stat sb;
    if (nlocked < MAX_LOCKED_FILES && fstat(fd, &sb) == 0)
        locked[nlocked++] = (locked_file){fd, sb.st_dev, sb.st_ino};
    return 0;
}

int pg_open_locked_append(const char *path, const char *option, const char *what, FILE **out, pg_status *st)
{
    *out = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, NEW_FILE_MODE);
    if (fd < 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 0}, option, "cannot open for writing: %s",
                          strerror(errno));
    int rc = pg_lock_output(fd, path, what, st);
    if (rc == 0 && !(*out = fdopen(fd, "a")))
        rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: cannot open: %s", path, strerror(errno));
    if (rc != 0)
        close(fd);
    return rc;
}
