/* config.c: experiment YAML -> flat dotted keys, plus --set overrides.
 *
 * Flattening joins nested mapping keys with "."; a key that already
 * contains dots is used as written, so `offload: selective` and
 * `offload.ratio: 0.5` can sit side by side at the top level.  Two
 * spellings of one dotted key in the same file (`uniform: {f: 1}` and
 * `uniform.f: 2`) are an error, like a duplicate YAML key: one of them
 * would otherwise be silently ignored.
 */
#include "model/config.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/yamltree.h"

/* The origin "file" of values that came from the command line. */
#define CONFIG_SET_ORIGIN "--set"
/* Separator for the items of a sequence value. */
#define CONFIG_LIST_SEP ","

void config_init(config *c)
{
    memset(c, 0, sizeof *c);
}

void config_free(config *c)
{
    for (size_t i = 0; i < c->count; i++) {
        free(c->entries[i].key);
        free(c->entries[i].value);
    }
    free(c->entries);
    for (size_t i = 0; i < c->nfiles; i++)
        free(c->files[i]);
    free(c->files);
    config_init(c);
}

static cfg_entry *find_mut(config *c, const char *key)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->entries[i].key, key) == 0)
            return &c->entries[i];
    return NULL;
}

const cfg_entry *config_find(const config *c, const char *key)
{
    return find_mut((config *)c, key);
}

void config_put(config *c, const char *key, const char *value, pg_origin origin)
{
    cfg_entry *e = find_mut(c, key);
    if (e) {
        free(e->value);
        e->value = pg_xstrdup(value);
        e->origin = origin;
        return;
    }
    void *p = c->entries;
    pg_grow(&p, &c->cap, c->count + 1, sizeof *c->entries);
    c->entries = p;
    e = &c->entries[c->count++];
    e->key = pg_xstrdup(key);
    e->value = pg_xstrdup(value);
    e->origin = origin;
}

/* The file name, owned by c, that origins of this file will point to. */
static const char *intern_file(config *c, const char *path)
{
    for (size_t i = 0; i < c->nfiles; i++)
        if (strcmp(c->files[i], path) == 0)
            return c->files[i];
    c->files = pg_xrealloc(c->files, (c->nfiles + 1) * sizeof *c->files);
    c->files[c->nfiles] = pg_xstrdup(path);
    return c->files[c->nfiles++];
}

typedef struct flattener {
    config *c;
    const char *file;
    /* Keys this file has set so far: a second spelling of one is an error. */
    char **seen;
    int *seen_lines;
    size_t nseen, cap_seen;
    pg_status *st;
} flattener;

static int put_once(flattener *f, const char *key, const char *value, int line)
{
    for (size_t i = 0; i < f->nseen; i++) {
        if (strcmp(f->seen[i], key) == 0) {
            pg_origin where = {f->file, line};
            return pg_fail_at(f->st, PG_EXIT_INPUT, where, key, "given twice in this file (first at line %d)",
                              f->seen_lines[i]);
        }
    }
    if (f->nseen == f->cap_seen) {
        size_t cap = f->cap_seen;
        void *p = f->seen;
        pg_grow(&p, &cap, f->nseen + 1, sizeof *f->seen);
        f->seen = p;
        f->seen_lines = pg_xrealloc(f->seen_lines, cap * sizeof *f->seen_lines);
        f->cap_seen = cap;
    }
    f->seen[f->nseen] = pg_xstrdup(key);
    f->seen_lines[f->nseen] = line;
    f->nseen++;
    pg_origin where = {f->file, line};
    config_put(f->c, key, value, where);
    return 0;
}

static int flatten(flattener *f, const yt_node *map, const char *prefix)
{
    for (size_t i = 0; i < map->count; i++) {
        const char *k = map->keys[i];
        pg_origin where = {f->file, map->key_lines[i]};
        strbuf key;
        sb_init(&key);
        if (prefix) {
            sb_append(&key, prefix);
            sb_append(&key, ".");
        }
        sb_append(&key, k);
        int rc = 0;
        if (k[0] == '\0' || k[0] == '.' || k[strlen(k) - 1] == '.' || strstr(k, "..")) {
            rc = pg_fail_at(f->st, PG_EXIT_INPUT, where, key.data,
                            "a key must be a non-empty name, with dots only between parts");
        } else {
            const yt_node *v = map->items[i];
            if (v->kind == YT_MAP) {
                rc = flatten(f, v, key.data);
            } else if (v->kind == YT_SCALAR) {
                rc = put_once(f, key.data, v->scalar, map->key_lines[i]);
            } else {
                strbuf joined;
                sb_init(&joined);
                sb_append(&joined, "");
                for (size_t j = 0; j < v->count && rc == 0; j++) {
                    const yt_node *item = v->items[j];
                    if (item->kind != YT_SCALAR) {
                        pg_origin at = {f->file, item->line};
                        rc = pg_fail_at(f->st, PG_EXIT_INPUT, at, key.data,
                                        "list items must be plain values, not a %s", yt_kind_name(item->kind));
                        break;
                    }
                    if (j > 0)
                        sb_append(&joined, CONFIG_LIST_SEP);
                    sb_append(&joined, item->scalar);
                }
                if (rc == 0)
                    rc = put_once(f, key.data, joined.data, map->key_lines[i]);
                sb_free(&joined);
            }
        }
        sb_free(&key);
        if (rc)
            return rc;
    }
    return 0;
}

/* Flatten a loaded document into c; consumes doc. */
static int load_doc(config *c, yt_doc *doc, const char *label, pg_status *st)
{
    if (!doc->root) {
        yt_free(doc);
        return 0;  /* an empty experiment means "all defaults" */
    }
    const char *file = intern_file(c, label);
    int rc;
    if (doc->root->kind != YT_MAP) {
        pg_origin where = {file, doc->root->line};
        rc = pg_fail_at(st, PG_EXIT_INPUT, where, NULL, "an experiment must be a mapping of keys to values, not a %s",
                        yt_kind_name(doc->root->kind));
        yt_free(doc);
        return rc;
    }
    flattener f = {.c = c, .file = file, .st = st};
    rc = flatten(&f, doc->root, NULL);
    for (size_t i = 0; i < f.nseen; i++)
        free(f.seen[i]);
    free(f.seen);
    free(f.seen_lines);
    yt_free(doc);
    return rc;
}

int config_load_file(config *c, const char *path, pg_status *st)
{
    yt_doc doc;
    int rc = yt_load_file(path, &doc, st);
    if (rc)
        return rc;
    return load_doc(c, &doc, path, st);
}

int config_load_buffer(config *c, const char *data, size_t len, const char *label, pg_status *st)
{
    if (!label)
        label = "<input>";
    yt_doc doc;
    int rc = yt_load_buffer(data, len, label, &doc, st);
    if (rc)
        return rc;
    return load_doc(c, &doc, label, st);
}

/* Blanks around the key are dropped (a shell user may quote "pp = 4"); the
 * value keeps its inner text but loses surrounding blanks too. */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

int config_apply_set(config *c, const char *assignment, pg_status *st)
{
    if (!assignment)
        assignment = "";
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return pg_fail(st, PG_EXIT_INPUT, CONFIG_SET_ORIGIN " '%s': expected KEY=VALUE", assignment);
    const char *k = assignment;
    size_t kn = (size_t)(eq - assignment);
    trim(&k, &kn);
    if (kn == 0)
        return pg_fail(st, PG_EXIT_INPUT, CONFIG_SET_ORIGIN " '%s': empty key (expected KEY=VALUE)", assignment);
    const char *v = eq + 1;
    size_t vn = strlen(v);
    trim(&v, &vn);
    char *key = pg_xmalloc(kn + 1);
    memcpy(key, k, kn);
    key[kn] = '\0';
    char *value = pg_xmalloc(vn + 1);
    memcpy(value, v, vn);
    value[vn] = '\0';
    pg_origin where = {CONFIG_SET_ORIGIN, 0};
    config_put(c, key, value, where);
    free(key);
    free(value);
    return 0;
}

int config_origin_is_set(pg_origin at)
{
    return at.file != NULL && strcmp(at.file, CONFIG_SET_ORIGIN) == 0;
}
