/* glpk_guard.c: GLPK's error hook turned into a return code (glpk_guard.h). */
#include "opt/glpk_guard.h"

#include <glpk.h>
#include <setjmp.h>
#include <stddef.h>

/* The active guard's jump target; NULL outside glpk_guarded. */
static jmp_buf *active_target;

static void on_glpk_error(void *info)
{
    (void)info;
    /* GLPK must not return from its error hook: its state is broken. */
    longjmp(*active_target, 1);
}

static int swallow_output(void *info, const char *text)
{
    (void)info;
    (void)text;
    return 1;   /* nonzero: GLPK prints nothing */
}

int glpk_guarded(glpk_guarded_fn fn, void *arg)
{
    jmp_buf target;
    active_target = &target;
    glp_term_hook(swallow_output, NULL);
    glp_error_hook(on_glpk_error, NULL);
    if (setjmp(target) != 0) {
        active_target = NULL;
        /* The hooks live in the environment this frees. */
        glp_free_env();
        return -1;
    }
    fn(arg);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    active_target = NULL;
    return 0;
}
