// Interface between the Go package and the C++ shim around CbcModel.
// Declarations only: the file is included by cgo preambles, which must not
// contain definitions in a package with //export functions.

#ifndef LENSPEC_CBC_SHIM_H
#define LENSPEC_CBC_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ls_problem is a minimisation problem in column-major form.
typedef struct {
	int ncols, nrows;
	const int *start;   // ncols+1 column starts
	const int *index;   // row indices
	const double *value;
	const double *collb, *colub, *obj;
	const double *rowlb, *rowub;
	const char *isint;  // ncols flags
	const double *mipstart; // ncols values or NULL
	double time_limit;  // seconds; <= 0 means none
	int threads;
	int use_cutoff;
	double cutoff;
	int solution_limit; // <= 0 means none
	double rel_gap, abs_gap; // <= 0 means default
	const char *extra;  // newline-separated extra CBC parameters, or NULL
	int inject_exception; // tests only: throw 1 a CoinError, 2 a std::exception, 3 an int
} ls_problem;

// LS_MESSAGE_SIZE is the size of ls_result.message.
#define LS_MESSAGE_SIZE 1024

// ls_result receives CBC's verdict.
typedef struct {
	int ran;            // CbcMain1 reached branch and bound
	int status, secondary;
	int proven_optimal, proven_infeasible, unbounded, abandoned;
	int has_solution;
	double objective;   // CBC's objective of the solution
	double bound;       // CBC's best possible objective value
	int64_t nodes;
	int cancelled;      // the stop request: 0 none, 1 cancelled, 2 time limit
	int lp_stopped;     // an LP was cut short: CBC's conclusions are not trusted
	double stop_bound;  // the bound proven when the stop was asked (-HUGE_VAL: none)
	int main_return;    // CbcMain1's return code
	int exception;      // a C++ exception was caught
	double increment;   // CBC's cutoff increment during branch and bound
	char message[LS_MESSAGE_SIZE]; // the exception's message, NUL-terminated
} ls_result;

typedef struct ls_ctx ls_ctx;

// ls_ctx_new returns a context reporting events to the Go handle h if
// events is nonzero.
ls_ctx *ls_ctx_new(uintptr_t h, int events);
// ls_ctx_cancel asks the solve using c to stop, why being 1 (cancelled)
// or 2 (time limit); cut nonzero also cuts short the LP under way (see
// shim.cpp). Safe from any thread.
void ls_ctx_cancel(ls_ctx *c, int why, int cut);
void ls_ctx_free(ls_ctx *c);

// ls_solve solves p, writing the solution (if any) into x (ncols values).
// Solves must not run concurrently.
void ls_solve(const ls_problem *p, ls_ctx *c, ls_result *r, double *x);

// ls_lp_set_deadline makes every later simplex solve of clp (a
// Clp_Simplex* of CLP's C interface) stop at the first iteration that ends
// seconds of wall-clock time from now (seconds < 0: never). The solve then
// ends with status 5. CLP's own time limit counts CPU time, which runs
// slower than the clock when the machine is shared. Returns 0 if clp's
// layout is not the one this shim knows (the deadline is then not set).
int ls_lp_set_deadline(void *clp, double seconds);

// ls_sigint_handler returns the address of the current SIGINT handler, so
// that tests can check that a solve leaves Go's signal handling alone.
uintptr_t ls_sigint_handler(void);

#ifdef __cplusplus
}
#endif

#endif
