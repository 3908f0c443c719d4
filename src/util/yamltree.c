/* yamltree.c: libyaml events -> a tree of nodes with line numbers.
 *
 * The tree is built with an explicit stack, and every node is linked into
 * its parent the moment it is created, so that on any error freeing the root
 * frees everything: no path through hostile input can leak or double-free.
 * Nesting is capped (YT_MAX_DEPTH) so that yt_free's recursion and every
 * recursive consumer of the tree stay shallow whatever the input.
 */
#include "util/yamltree.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Experiments and profiles nest three or four levels; anything deeper than
 * this is not a file we wrote, and refusing it bounds recursion. */
#define YT_MAX_DEPTH 64
/* Data files are small; refusing huge ones keeps a typo'd path to a
 * multi-gigabyte file from eating memory. */
/* Duplicate keys are found by a linear scan; capping keys per mapping keeps
 * that scan cheap on hostile input (our files have tens of keys). */
#define YT_MAX_MAP_KEYS 10000
#define YT_MAX_FILE_BYTES (64L * 1024 * 1024)

typedef struct frame {
    yt_node *node;      /* a YT_MAP or YT_SEQ being filled */
    char *pending_key;  /* YT_MAP: key read, value not yet */
    int pending_line;
} frame;

typedef struct builder {
    const char *file;
    frame stack[YT_MAX_DEPTH];
    int depth;
    yt_node *root;
    int documents;
    pg_status *st;
} builder;

static yt_node *node_new(yt_kind kind, int line)
{
    yt_node *n = pg_xcalloc(1, sizeof *n);
    n->kind = kind;
    n->line = line;
    return n;
}

static void node_free(yt_node *n)
{
    if (!n)
        return;
    free(n->scalar);
    for (size_t i = 0; i < n->count; i++) {
        if (n->keys)
            free(n->keys[i]);
        node_free(n->items[i]);
    }
    free(n->keys);
    free(n->key_lines);
    free(n->items);
    free(n);
}

const char *yt_kind_name(yt_kind kind)
{
    switch (kind) {
    case YT_SCALAR: return "scalar";
    case YT_MAP: return "mapping";
    case YT_SEQ: return "sequence";
    }
    return "unknown";
}

static int fail_line(builder *b, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail_line(builder *b, int line, const char *fmt, ...)
{
    char text[PG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pg_origin where = {b->file, line};
    return pg_fail_at(b->st, PG_EXIT_INPUT, where, NULL, "%s", text);
}

/* Append a finished or just-opened node to the innermost open collection (or
 * make it the root).  A mapping alternates key, value: a scalar arriving when
 * no key is pending becomes the key. */
static int attach(builder *b, yt_node *n)
{
    if (b->depth == 0) {
        if (b->root) {
            int rc = fail_line(b, n->line, "more than one root node");
            node_free(n);
            return rc;
        }
        b->root = n;
        return 0;
    }
    frame *f = &b->stack[b->depth - 1];
    yt_node *parent = f->node;
    if (parent->kind == YT_MAP && !f->pending_key) {
        if (n->kind != YT_SCALAR) {
            int line = n->line;
            int rc = fail_line(b, line, "mapping keys must be plain scalars, not a %s", yt_kind_name(n->kind));
            node_free(n);
            return rc;
        }
        if (parent->count >= YT_MAX_MAP_KEYS) {
            int line = n->line;
            node_free(n);
            return fail_line(b, line, "more than %d keys in one mapping", YT_MAX_MAP_KEYS);
        }
        for (size_t i = 0; i < parent->count; i++) {
            if (strcmp(parent->keys[i], n->scalar) == 0) {
                pg_origin where = {b->file, n->line};
                pg_fail_at(b->st, PG_EXIT_INPUT, where, n->scalar, "duplicate key (first at line %d)",
                           parent->key_lines[i]);
                node_free(n);
                return PG_EXIT_INPUT;
            }
        }
        f->pending_key = n->scalar;
        f->pending_line = n->line;
        n->scalar = NULL;
        node_free(n);
        return 0;
    }
    /* The node has no capacity field: capacity is count rounded up to a power
     * of two, so arrays double exactly when count reaches one. */
    size_t i = parent->count;
    if (i == 0 || (i & (i - 1)) == 0) {
        size_t cap = i ? 2 * i : 1;
        parent->items = pg_xrealloc(parent->items, cap * sizeof *parent->items);
        if (parent->kind == YT_MAP) {
            parent->keys = pg_xrealloc(parent->keys, cap * sizeof *parent->keys);
            parent->key_lines = pg_xrealloc(parent->key_lines, cap * sizeof *parent->key_lines);
        }
    }
    if (parent->kind == YT_MAP) {
        parent->keys[i] = f->pending_key;
        parent->key_lines[i] = f->pending_line;
        f->pending_key = NULL;
    }
    parent->items[i] = n;
    parent->count = i + 1;
    return 0;
}

static int open_collection(builder *b, yt_kind kind, int line, const yaml_char_t *anchor)
{
    if (anchor)
        return fail_line(b, line, "anchors and aliases are not supported (anchor '%s')", (const char *)anchor);
    if (b->depth >= YT_MAX_DEPTH)
        return fail_line(b, line, "nesting deeper than %d levels", YT_MAX_DEPTH);
    yt_node *n = node_new(kind, line);
    int rc = attach(b, n);
    if (rc)
        return rc;
    b->stack[b->depth].node = n;
    b->stack[b->depth].pending_key = NULL;
    b->stack[b->depth].pending_line = 0;
    b->depth++;
    return 0;
}

static int handle_event(builder *b, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
    case YAML_NO_EVENT:
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1)
            return fail_line(b, line, "more than one YAML document in the file");
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        return 0;
    case YAML_ALIAS_EVENT:
        return fail_line(b, line, "anchors and aliases are not supported (alias '%s')",
                         (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT: {
        if (ev->data.scalar.anchor)
            return fail_line(b, line, "anchors and aliases are not supported (anchor '%s')",
                             (const char *)ev->data.scalar.anchor);
        yt_node *n = node_new(YT_SCALAR, line);
        size_t len = ev->data.scalar.length;
        n->scalar = pg_xmalloc(len + 1);
        if (len)
            memcpy(n->scalar, ev->data.scalar.value, len);
        n->scalar[len] = '\0';
        return attach(b, n);
    }
    case YAML_SEQUENCE_START_EVENT:
        return open_collection(b, YT_SEQ, line, ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return open_collection(b, YT_MAP, line, ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth > 0) {
            b->depth--;
            /* libyaml always pairs a key with a value, so nothing is pending here;
             * free defensively rather than assert on parser internals. */
            free(b->stack[b->depth].pending_key);
            b->stack[b->depth].pending_key = NULL;
        }
        return 0;
    }
    return 0;
}

static void builder_cleanup(builder *b)
{
    for (int i = 0; i < b->depth; i++)
        free(b->stack[i].pending_key);
    b->depth = 0;
}

int yt_load_buffer(const char *data, size_t len, const char *file_label, yt_doc *doc, pg_status *st)
{
    doc->file = pg_xstrdup(file_label ? file_label : "<input>");
    doc->root = NULL;

    builder b;
    memset(&b, 0, sizeof b);
    b.file = doc->file;
    b.st = st;

    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        yt_free(doc);
        return pg_fail(st, PG_EXIT_INTERNAL, "cannot initialise the YAML parser");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)(data ? data : ""), data ? len : 0);

    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            int line = (int)parser.problem_mark.line + 1;
            pg_origin where = {b.file, line};
            if (parser.error == YAML_MEMORY_ERROR)
                rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: out of memory while parsing YAML", b.file);
            else
                rc = pg_fail_at(st, PG_EXIT_INPUT, where, NULL, "malformed YAML: %s%s%s",
                                parser.problem ? parser.problem : "syntax error",
                                parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        int done = ev.type == YAML_STREAM_END_EVENT;
        rc = handle_event(&b, &ev);
        yaml_event_delete(&ev);
        if (rc || done)
            break;
    }
    yaml_parser_delete(&parser);
    builder_cleanup(&b);
    doc->root = b.root;
    if (rc) {
        yt_free(doc);
        return rc;
    }
    /* "---" alone, or a file of just "~"-less emptiness, is an empty document. */
    if (doc->root && doc->root->kind == YT_SCALAR && doc->root->scalar[0] == '\0') {
        node_free(doc->root);
        doc->root = NULL;
    }
    return 0;
}

int yt_load_file(const char *path, yt_doc *doc, pg_status *st)
{
    doc->file = NULL;
    doc->root = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    char *data = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        void *p = data;
        pg_grow(&p, &cap, len + BUFSIZ, 1);
        data = p;
        size_t got = fread(data + len, 1, cap - len, fp);
        len += got;
        if ((long)len > YT_MAX_FILE_BYTES) {
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: file too large for an input file (over %ld bytes)", path,
                         YT_MAX_FILE_BYTES);
            break;
        }
        if (got == 0) {
            if (ferror(fp))
                rc = pg_fail(st, PG_EXIT_INPUT, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
    }
    fclose(fp);
    if (rc == 0)
        rc = yt_load_buffer(data, len, path, doc, st);
    free(data);
    return rc;
}

void yt_free(yt_doc *doc)
{
    if (!doc)
        return;
    node_free(doc->root);
    free(doc->file);
    doc->root = NULL;
    doc->file = NULL;
}

const yt_node *yt_get(const yt_node *map, const char *key)
{
    if (!map || map->kind != YT_MAP || !key)
        return NULL;
    for (size_t i = 0; i < map->count; i++)
        if (strcmp(map->keys[i], key) == 0)
            return map->items[i];
    return NULL;
}
