/* numtext.h: numbers written into generated platform files (model layer only).
 *
 * The shortest decimal text that reads back as exactly the same double, so
 * generated XML is readable ("5e-07", "450000000000") and still exact:
 * network=ideal relies on SimGrid reading back the very latencies we
 * computed.  Private to src/model (platform.c, cluster.c).
 */
#ifndef PG_MODEL_NUMTEXT_H
#define PG_MODEL_NUMTEXT_H

#include <stdio.h>
#include <stdlib.h>

#define PG_NUMTEXT_MAX 32

static inline const char *pg_numtext(double v, char buf[PG_NUMTEXT_MAX])
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, PG_NUMTEXT_MAX, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

#endif
