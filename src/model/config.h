/* config.h: the raw key/value view of an experiment.
 *
 * An experiment YAML file is a mapping, possibly nested; nested mappings are
 * flattened into dotted keys ("uniform: {f: 1}" gives "uniform.f").  A
 * sequence value is kept as one entry whose value is the items joined by ","
 * (the only lists experiments have are short lists of numbers or names).
 * `--set KEY=VALUE` options are applied afterwards, in order, and replace
 * file values.  Every entry remembers its origin (file and line, or "--set")
 * so the typed layer (experiment.h) can name it in any error.
 */
#ifndef PG_MODEL_CONFIG_H
#define PG_MODEL_CONFIG_H

#include <stddef.h>
#include "util/error.h"

typedef struct cfg_entry {
    char *key;
    char *value;
    pg_origin origin;     /* origin.file points into config.files */
} cfg_entry;

typedef struct config {
    cfg_entry *entries;
    size_t count, cap;
    char **files;         /* file names referenced by origins (owned) */
    size_t nfiles;
} config;

void config_init(config *c);
void config_free(config *c);

/* Read an experiment file; its entries are added (replacing same keys). */
int config_load_file(config *c, const char *path, pg_status *st);
/* The same from memory (tests, fuzzing); label names it in messages. */
int config_load_buffer(config *c, const char *data, size_t len, const char *label, pg_status *st);
/* Apply "KEY=VALUE" from the command line. */
int config_apply_set(config *c, const char *assignment, pg_status *st);
/* Set key directly (origin given). */
void config_put(config *c, const char *key, const char *value, pg_origin origin);

const cfg_entry *config_find(const config *c, const char *key);

/* Whether a value came from a --set option (rather than a file). */
int config_origin_is_set(pg_origin at);

#endif
