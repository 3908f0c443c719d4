/* options.c: the options shared by run, schedule, bound and sweep. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/units.h"

static const struct {
    const char *name;
    output_format format;
} FORMATS[] = {
    {"text", FORMAT_TEXT}, {"json", FORMAT_JSON}, {"csv", FORMAT_CSV}, {"torch-csv", FORMAT_TORCH_CSV},
    {"jsonl", FORMAT_JSONL},
};

static int parse_format(const char *text, unsigned allowed, output_format *out, pg_status *st)
{
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        if (strcmp(text, FORMATS[i].name) == 0 && (allowed & (1u << FORMATS[i].format))) {
            *out = FORMATS[i].format;
            return 0;
        }
    return pg_fail(st, PG_EXIT_INPUT, "--format: '%s' is not one of the formats of this command", text);
}

enum { OPT_TRACE = 256, OPT_COLOR, OPT_SIMULATED, OPT_EMIT, OPT_CHUNKS, OPT_CHUNK, OPT_SVG, OPT_RESUME, OPT_FULL_FRONT, OPT_VERBOSE, OPT_TIME_LIMIT };

/* The CLI_OPT_* bit and the name of a getopt code (bit 0: --set, --format
 * and operands, which every command takes). */
static const struct {
    int code;
    unsigned bit;
    const char *name;
} OPTION_BITS[] = {
    {OPT_TRACE, CLI_OPT_TRACE, "--trace"},  {OPT_SVG, CLI_OPT_SVG, "--svg"},
    {OPT_COLOR, CLI_OPT_COLOR, "--color"},  {OPT_SIMULATED, CLI_OPT_SIMULATED, "--simulated"},
    {'g', CLI_OPT_GRID, "--grid"},          {'j', CLI_OPT_JOBS, "-j/--jobs"},
    {'o', CLI_OPT_OUTPUT, "-o/--output"},   {OPT_EMIT, CLI_OPT_EMIT, "--emit"},
    {OPT_CHUNKS, CLI_OPT_CHUNKS, "--chunks"}, {OPT_CHUNK, CLI_OPT_CHUNK, "--chunk"},
    {OPT_RESUME, CLI_OPT_RESUME, "--resume"}, {OPT_FULL_FRONT, CLI_OPT_FULL_FRONT, "--full-front"},
    {OPT_VERBOSE, CLI_OPT_VERBOSE, "--verbose"}, {OPT_TIME_LIMIT, CLI_OPT_TIME_LIMIT, "--time-limit"},
};

static int option_bit(int c, unsigned *bit, const char **name)
{
    for (size_t i = 0; i < sizeof OPTION_BITS / sizeof OPTION_BITS[0]; i++)
        if (OPTION_BITS[i].code == c) {
            *bit = OPTION_BITS[i].bit;
            *name = OPTION_BITS[i].name;
            return 1;
        }
    return 0;
}

int cli_parse_options(int argc, char **argv, int first, unsigned allowed_formats, unsigned accepted, cli_options *o,
                      pg_status *st)
{
    static const struct option LONG_OPTIONS[] = {
        {"set", required_argument, NULL, 's'},    {"format", required_argument, NULL, 'f'},
        {"trace", required_argument, NULL, OPT_TRACE}, {"color", optional_argument, NULL, OPT_COLOR},
        {"simulated", no_argument, NULL, OPT_SIMULATED}, {"grid", required_argument, NULL, 'g'},
        {"jobs", required_argument, NULL, 'j'},   {"output", required_argument, NULL, 'o'},
        {"emit", required_argument, NULL, OPT_EMIT}, {"chunks", required_argument, NULL, OPT_CHUNKS},
        {"chunk", required_argument, NULL, OPT_CHUNK}, {"svg", required_argument, NULL, OPT_SVG},
        {"resume", required_argument, NULL, OPT_RESUME}, {"full-front", no_argument, NULL, OPT_FULL_FRONT},
        {"verbose", no_argument, NULL, OPT_VERBOSE}, {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->format = FORMAT_TEXT;
    o->color = -1;
    o->jobs = 1;
    o->sets = pg_xcalloc((size_t)argc + 1, sizeof *o->sets);
    o->grids = pg_xcalloc((size_t)argc + 1, sizeof *o->grids);
    optind = first;
    opterr = 0;
    int c;
    /* "-": the experiment file may come before the options, as the usage
     * lines write it (`run EXPERIMENT.yaml --set ...`): getopt hands every
     * non-option over as c == 1, in place.  ":" next: an option missing its
     * value comes back as ':', not as an unknown option. */
    while ((c = getopt_long(argc, argv, "-:s:f:g:j:o:", LONG_OPTIONS, NULL)) != -1) {
        const char *why = NULL;
        long n;
        unsigned bit;
        const char *name;
        if (option_bit(c, &bit, &name) && !(accepted & bit))
            return pg_fail(st, PG_EXIT_INPUT, "option %s does not apply to `pipegrid %s` (see pipegrid --help)", name,
                           argv[1]);
        switch (c) {
        case 1:
            if (o->experiment_path != NULL)
                return pg_fail(st, PG_EXIT_INPUT, "unexpected argument '%s' (one experiment file at most)", optarg);
            o->experiment_path = optarg;
            break;
        case 's': o->sets[o->nsets++] = optarg; break;
        case 'g': o->grids[o->ngrids++] = optarg; break;
        case 'f':
            if (parse_format(optarg, allowed_formats, &o->format, st) != 0)
                return st->code;
            break;
        case 'j':
            if (units_parse_long(optarg, &n, &why) != 0 || n < 1 || n > 1024)
                return pg_fail(st, PG_EXIT_INPUT, "-j: '%s' is not a worker count between 1 and 1024", optarg);
            o->jobs = (int)n;
            break;
        case 'o': o->output_path = optarg; break;
        case OPT_TRACE: o->trace_path = optarg; break;
        case OPT_SVG: o->svg_path = optarg; break;
        case OPT_EMIT: o->emit = optarg; break;
        case OPT_CHUNKS: o->chunks = optarg; break;
        case OPT_CHUNK: o->chunk = optarg; break;
        case OPT_RESUME: o->resume_path = optarg; break;
        case OPT_FULL_FRONT: o->full_front = 1; break;
        case OPT_VERBOSE: o->verbose = 1; break;
        case OPT_TIME_LIMIT: o->time_limit = optarg; break;
        case OPT_SIMULATED: o->simulated = 1; break;
        case OPT_COLOR:
            if (optarg == NULL || strcmp(optarg, "always") == 0) o->color = 1;
            else if (strcmp(optarg, "never") == 0) o->color = 0;
            else if (strcmp(optarg, "auto") == 0) o->color = -1;
            else return pg_fail(st, PG_EXIT_INPUT, "--color: '%s' is not always, never or auto", optarg);
            break;
        case ':':
            return pg_fail(st, PG_EXIT_INPUT, "option %s needs a value%s", argv[optind - 1],
                           optopt == 's' ? " (--set KEY=VALUE)" : optopt == 'g' ? " (--grid KEY=V1,V2,...)" : "");
        default:
            return pg_fail(st, PG_EXIT_INPUT, "unknown option '%s' (see pipegrid --help)", argv[optind - 1]);
        }
    }
    if (optind < argc && o->experiment_path == NULL)
        o->experiment_path = argv[optind++];   /* after "--" */
    if (optind < argc)
        return pg_fail(st, PG_EXIT_INPUT, "unexpected argument '%s' (one experiment file at most)", argv[optind]);
    return 0;
}

void cli_options_free(cli_options *o)
{
    free(o->sets);
    free(o->grids);
    memset(o, 0, sizeof *o);
}

/* The start and the end of a subcommand that reads an experiment (cli.h). */
int job_start(int argc, char **argv, int first, unsigned formats, unsigned accepted, int want_schedule,
              cli_options *o, job *j, pg_status *st)
{
    pg_status_clear(st);
    memset(j, 0, sizeof *j);
    config_init(&j->cfg);
    int rc = cli_parse_options(argc, argv, first, formats, accepted, o, st);
    if (rc == 0)
        rc = job_load_experiment(j, o->experiment_path, o->sets, o->nsets, st);
    if (rc == 0 && want_schedule)
        rc = job_build_schedule(j, st);
    return rc;
}

void job_finish(job *j, cli_options *o)
{
    job_free(j);
    cli_options_free(o);
}

int cli_write_stdout(const strbuf *out, pg_status *st)
{
    if (sb_write(out, stdout) != 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "cannot write to standard output");
    return 0;
}

/* Here rather than in main.c, which calls every subcommand: the subcommands
 * call this, and no call goes back up to main.c. */
int cli_report_error(const pg_status *st)
{
    fprintf(stderr, "pipegrid: %s\n", st->msg);
    return st->code ? st->code : PG_EXIT_INTERNAL;
}
