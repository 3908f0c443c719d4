/* yamltree.h: a YAML document as a small tree that remembers line numbers.
 *
 * libyaml's event stream is turned into nodes (scalar, mapping, sequence);
 * every node keeps the 1-based line where it starts so that any later error
 * can name FILE:LINE.  Anchors/aliases and multi-document streams are
 * rejected: experiment and profile files never need them, and refusing them
 * keeps the parser's behaviour on hostile input simple (it is fuzzed).
 * Duplicate keys in one mapping are an error.
 */
#ifndef PG_UTIL_YAMLTREE_H
#define PG_UTIL_YAMLTREE_H

#include <stddef.h>
#include "util/error.h"

typedef enum { YT_SCALAR, YT_MAP, YT_SEQ } yt_kind;

typedef struct yt_node yt_node;
struct yt_node {
    yt_kind kind;
    int line;              /* 1-based */
    char *scalar;          /* YT_SCALAR: the text ("" for an empty value) */
    size_t count;          /* YT_MAP: pairs; YT_SEQ: items */
    char **keys;           /* YT_MAP: keys[i] */
    int *key_lines;        /* YT_MAP: line of keys[i] */
    yt_node **items;       /* YT_MAP: values; YT_SEQ: items */
};

typedef struct yt_doc {
    char *file;            /* as given, used in messages */
    yt_node *root;         /* NULL for an empty document */
} yt_doc;

/* Parse a file / a buffer (file_label names it in messages).  On error
 * returns PG_EXIT_INPUT with "FILE:LINE: ..." in st. */
int yt_load_file(const char *path, yt_doc *doc, pg_status *st);
int yt_load_buffer(const char *data, size_t len, const char *file_label, yt_doc *doc, pg_status *st);
void yt_free(yt_doc *doc);

/* Mapping lookup; NULL if absent or node is not a mapping. */
const yt_node *yt_get(const yt_node *map, const char *key);

const char *yt_kind_name(yt_kind kind);

#endif
