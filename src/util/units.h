/* units.h: quantities with units, written the way SimGrid writes them.
 *
 *   bytes      80GiB 34MiB 1.5kB 512B 4096        (bare number = bytes; k/M/G/T = 10^3.., Ki/Mi.. = 2^10..;
 *                                                  a lower-case b means bits: 100Gb)
 *   bandwidth  150GBps 100Gbps 25GiBps 1e9        (bare number = bytes per second; bps = bits per second)
 *   duration   2us 1.5ms 3s 10ns 1ps 1m 1h        (bare number = seconds)
 *   speed      989Tf 312Tf 1e12                   (flop/s; bare number = flop/s)
 *
 * Parsers accept optional surrounding blanks, reject negative values, NaN,
 * infinity, trailing garbage and unknown suffixes, and return 0 on success or
 * -1 with a short reason in *why (static string; why may be NULL when the
 * caller reports the failure itself).
 */
#ifndef PG_UTIL_UNITS_H
#define PG_UTIL_UNITS_H

/* Bytes in a GiB (2^30): the unit memory is printed in and GPUs are sized in.
 * The one definition; everything that shows or sizes GiB uses it. */
#define GIB (1024.0 * 1024.0 * 1024.0)

int units_parse_bytes(const char *text, double *bytes, const char **why);
int units_parse_bandwidth(const char *text, double *bytes_per_s, const char **why);
int units_parse_duration(const char *text, double *seconds, const char **why);
int units_parse_speed(const char *text, double *flops_per_s, const char **why);

/* Plain numbers. */
int units_parse_double(const char *text, double *value, const char **why);
int units_parse_long(const char *text, long *value, const char **why);
/* true/false yes/no on/off 1/0 */
int units_parse_bool(const char *text, int *value, const char **why);

/* Pieces of at most piece_bytes that hold total_bytes: ceil(total / piece),
 * at least 1; 1 when piece_bytes is not positive (no splitting) or there is
 * nothing to split.  The gradient buckets of a stage: the simulator
 * (sim/gradsync.c) and optimize's bound (opt/bound_dp.c) count them with it. */
int units_pieces(double total_bytes, double piece_bytes);

/* Human formatting into buf (returns buf): "79.50 GiB", "1.250 ms", "150.0 GB/s". */
char *units_format_bytes(double bytes, char *buf, int len);
char *units_format_duration(double seconds, char *buf, int len);
char *units_format_bandwidth(double bytes_per_s, char *buf, int len);

#endif
