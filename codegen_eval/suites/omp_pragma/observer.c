/* The omp-pragma suite's observer: which thread ran each iteration of the marked loop, in
 * what team, at each time the loop was reached.
 *
 * The scorer links this file into the programs it builds and inserts into our own program
 * text (never the candidate's):
 *   __cge_omp_encounter();   just before the pragma (serial code, once per encounter);
 *   __CGE_OMP_ITER();        first statement of the innermost body of the loop nest: on
 *                            x86-64 one `incq` through the thread's counter pointer, an asm
 *                            statement that touches no memory the compiler knows of, so the
 *                            loop is optimised as without it (a shared accumulator stays in
 *                            a register and a missing reduction still races as it would).
 * With OpenMP, the program is linked with -Wl,--wrap for every GOMP_parallel* entry point
 * gcc emits for the accepted constructs: each team thread passes through cge_trampoline,
 * which points its counter at its row for this encounter and records its team size
 * (omp_get_num_threads(), the runtime's own answer). A thread that runs iterations without
 * having been seen counts into cge_unseen, which the report flags.
 *
 * At exit it writes, to the file named by $CGE_OMP_TRACE, one line per encounter:
 * iterations run, threads that ran at least one, smallest and largest team size of those,
 * and the most iterations any one thread ran (a chunk as large as the loop leaves the
 * others one iteration each: "two threads ran iterations" alone would call that shared).
 *
 * Why it may live in the candidate's process: the candidate contributes one pragma whose
 * every clause argument passed the suite's screen (reads of the program's variables and
 * constants only; no calls, assignments, statement expressions); the compiler gets the
 * screened tokens, not the answer's text. Such a pragma can change only how OpenMP runs
 * the loop, which is what this file measures; it cannot run code or name these symbols.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CGE_SLOTS 128       /* distinct threads recorded */
#define CGE_ENCOUNTERS 1024 /* encounters recorded */

static _Atomic long cge_epoch = -1; /* index of the current encounter */
static _Atomic int cge_nslots;
static _Atomic int cge_overflow;
static long cge_iters[CGE_SLOTS][CGE_ENCOUNTERS];
static int cge_team[CGE_SLOTS][CGE_ENCOUNTERS];
static long cge_unseen; /* iterations of threads never registered (racy: only != 0 matters) */

static __thread int t_slot = -1;
static __thread long t_sink;
__thread long *__cge_omp_count = &cge_unseen; /* read by the asm in __CGE_OMP_ITER */

void __cge_omp_encounter(void);
void __cge_omp_iter(void);

static void cge_register(long e, int team) {
    if (t_slot < 0) {
        int s = atomic_fetch_add(&cge_nslots, 1);
        t_slot = s < CGE_SLOTS ? s : CGE_SLOTS;
    }
    if (t_slot >= CGE_SLOTS || e < 0 || e >= CGE_ENCOUNTERS) {
        atomic_store(&cge_overflow, 1);
        __cge_omp_count = &t_sink;
        return;
    }
    cge_team[t_slot][e] = team;
    __cge_omp_count = &cge_iters[t_slot][e];
}

void __cge_omp_encounter(void) {
    /* Serial code before the construct: the encountering thread runs the loop itself when
     * no team is made (simd alone, an orphaned for); a trampoline re-registers it if one is. */
    long e = atomic_fetch_add(&cge_epoch, 1) + 1;
    cge_register(e, 1);
}

void __cge_omp_iter(void) { /* the portable hook (a call: it perturbs optimisation) */
    ++*__cge_omp_count;
}

#ifdef _OPENMP
struct cge_call {
    void *first; /* GOMP_parallel_reductions reads the first word of its data: a copy */
    void (*fn)(void *);
    void *data;
    long epoch;
};

static void cge_trampoline(void *arg) {
    struct cge_call *c = arg;
    cge_register(c->epoch, omp_get_num_threads());
    c->fn(c->data);
}

typedef void (*cge_fn)(void *);
#define CGE_CALL(fn, data) struct cge_call c = {NULL, fn, data, atomic_load(&cge_epoch)}

void __real_GOMP_parallel(cge_fn, void *, unsigned, unsigned);
void __wrap_GOMP_parallel(cge_fn fn, void *data, unsigned n, unsigned flags) {
    CGE_CALL(fn, data);
    __real_GOMP_parallel(cge_trampoline, &c, n, flags);
}

unsigned __real_GOMP_parallel_reductions(cge_fn, void *, unsigned, unsigned);
unsigned __wrap_GOMP_parallel_reductions(cge_fn fn, void *data, unsigned n, unsigned flags) {
    CGE_CALL(fn, data);
    c.first = *(void **)data; /* the reductions descriptor, as libgomp expects it */
    return __real_GOMP_parallel_reductions(cge_trampoline, &c, n, flags);
}

#define CGE_WRAP_CHUNKED(name)                                                            \
    void __real_##name(cge_fn, void *, unsigned, long, long, long, long, unsigned);      \
    void __wrap_##name(cge_fn fn, void *data, unsigned n, long start, long end, long incr, \
                       long chunk, unsigned flags) {                                      \
        CGE_CALL(fn, data);                                                               \
        __real_##name(cge_trampoline, &c, n, start, end, incr, chunk, flags);             \
    }
#define CGE_WRAP_RUNTIME(name)                                                            \
    void __real_##name(cge_fn, void *, unsigned, long, long, long, unsigned);            \
    void __wrap_##name(cge_fn fn, void *data, unsigned n, long start, long end, long incr, \
                       unsigned flags) {                                                  \
        CGE_CALL(fn, data);                                                               \
        __real_##name(cge_trampoline, &c, n, start, end, incr, flags);                    \
    }
CGE_WRAP_CHUNKED(GOMP_parallel_loop_static)
CGE_WRAP_CHUNKED(GOMP_parallel_loop_dynamic)
CGE_WRAP_CHUNKED(GOMP_parallel_loop_guided)
CGE_WRAP_CHUNKED(GOMP_parallel_loop_nonmonotonic_dynamic)
CGE_WRAP_CHUNKED(GOMP_parallel_loop_nonmonotonic_guided)
CGE_WRAP_RUNTIME(GOMP_parallel_loop_runtime)
CGE_WRAP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
CGE_WRAP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)
#endif

__attribute__((destructor)) static void cge_report(void) {
    const char *path = getenv("CGE_OMP_TRACE");
    if (path == NULL)
        return;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    long n = atomic_load(&cge_epoch) + 1;
    int slots = atomic_load(&cge_nslots);
    if (slots > CGE_SLOTS)
        slots = CGE_SLOTS;
    fprintf(f, "cge-omp-trace 3 encounters %ld overflow %d unseen %ld\n", n,
            atomic_load(&cge_overflow), cge_unseen);
    for (long e = 0; e < n && e < CGE_ENCOUNTERS; e++) {
        long total = 0, busiest = 0;
        int workers = 0, team_min = 0, team_max = 0;
        for (int s = 0; s < slots; s++) {
            if (cge_iters[s][e] == 0)
                continue;
            total += cge_iters[s][e];
            if (cge_iters[s][e] > busiest)
                busiest = cge_iters[s][e];
            workers++;
            int t = cge_team[s][e];
            if (team_min == 0 || t < team_min)
                team_min = t;
            if (t > team_max)
                team_max = t;
        }
        fprintf(f, "%ld %ld %d %d %d %ld\n", e, total, workers, team_min, team_max, busiest);
    }
    fclose(f);
}
