//go:build cgo

// A small C++ shim around CbcModel that the C API of CBC 2.10 lacks:
// events (incumbent, bound, progress) reported to Go, cancellation, and
// silence. The solve goes through CbcMain0/CbcMain1, the driver behind the
// cbc program, so that the model gets the same preprocessing, cuts and
// heuristics as the command line.

#include "shim.h"

#include <coin/CbcEventHandler.hpp>
#include <coin/ClpEventHandler.hpp>
#include <coin/ClpSimplex.hpp>
#include <coin/Clp_C_Interface.h>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/CoinError.hpp>
#include <coin/CoinTime.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <signal.h>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <vector>

extern "C" void lsCbcEvent(uintptr_t h, int kind, double obj, double bound, int64_t nodes, double elapsed);

// Event kinds; they match mip.EventKind.
enum { kIncumbent = 0, kBound = 1, kProgress = 2 };

// CBC keeps "no solution" as a huge objective value (coin.Infinity in Go).
static const double kNoSolution = 1e49;

struct ls_ctx {
	uintptr_t handle;
	int events;
	// cancel is 0, or why the solve is asked to stop: 1 cancelled, 2 the
	// time limit (the Go side's clock, which also runs while CLP is in an
	// LP, where CBC does not look at its own).
	std::atomic<int> cancel;
	// cut says whether LPs under way are to be cut short: for a time
	// limit or a deadline, not for a plain cancellation (a caller that
	// stops at the first incumbent would lose it: CBC validates a
	// heuristic's solution with an LP).
	std::atomic<int> cut;
	// lp_stopped is set once an LP was cut short: CBC then takes the
	// unfinished LP for what it is not (optimal, or infeasible — which
	// prunes), so nothing it concludes afterwards is trusted; the bound
	// proven before the stop is: report stops updating last_bound once
	// cancel is set, and reads the model's bound before it looks.
	std::atomic<int> lp_stopped;
	// post is set when branch and bound has ended: postprocessing
	// re-solves an LP to map the incumbent back to the original problem,
	// and cutting that one short would lose the incumbent.
	std::atomic<int> post;
	double t0;
	// main is the model branch and bound runs on (set just before it
	// starts); events read the incumbent and bound from it, since the
	// handler is also cloned into heuristics' sub-models, whose own
	// values are not those of the problem.
	std::atomic<CbcModel *> main;
	std::mutex mu; // guards the fields below and calls into Go
	double last_obj, last_bound, last_report;
	double increment;
};

extern "C" ls_ctx *ls_ctx_new(uintptr_t h, int events) {
	ls_ctx *c = new ls_ctx;
	c->handle = h;
	c->events = events;
	c->cancel.store(0);
	c->t0 = CoinGetTimeOfDay();
	c->main.store(nullptr);
	c->lp_stopped.store(0);
	c->cut.store(0);
	c->post.store(0);
	c->last_obj = HUGE_VAL;
	c->last_bound = -HUGE_VAL;
	c->last_report = c->t0;
	c->increment = 0;
	return c;
}

// ls_ctx_cancel takes no lock: it is called from Go inside report's
// critical section (a panicking event callback).
extern "C" void ls_ctx_cancel(ls_ctx *c, int why, int cut) {
	if (cut) {
		c->cut.store(1);
	}
	int none = 0;
	c->cancel.compare_exchange_strong(none, why);
}

extern "C" void ls_ctx_free(ls_ctx *c) { delete c; }

// report forwards the state of the main model to Go if something changed
// or if a progress heartbeat is due.
static void report(ls_ctx *c) {
	CbcModel *m = c->main.load();
	if (m == nullptr) {
		return;
	}
	double obj = m->bestSolution() != nullptr ? m->getObjValue() : HUGE_VAL;
	if (obj >= kNoSolution) {
		obj = HUGE_VAL;
	}
	double bound = m->getBestPossibleObjValue();
	if (bound <= -kNoSolution) {
		bound = -HUGE_VAL;
	}
	int64_t nodes = m->getNodeCount();
	std::lock_guard<std::mutex> lock(c->mu);
	if (c->cancel.load() != 0) {
		// Once stopping, an LP may have been cut short: what the model
		// reports from here on is not a bound.
		return;
	}
	double now = CoinGetTimeOfDay();
	int kind;
	if (obj < c->last_obj) {
		kind = kIncumbent;
	} else if (bound > c->last_bound && bound < kNoSolution) {
		kind = kBound;
	} else if (now - c->last_report >= 0.5) {
		kind = kProgress;
	} else {
		return;
	}
	c->last_obj = std::fmin(c->last_obj, obj);
	if (bound < kNoSolution) {
		c->last_bound = std::fmax(c->last_bound, bound);
	}
	c->last_report = now;
	if (c->events) {
		lsCbcEvent(c->handle, kind, obj, bound, nodes, now - c->t0);
	}
}

// LPStop ends an LP at CLP's next iteration once the solve is asked to
// stop at a time limit or deadline (until postprocessing). CBC looks at its clock and its events only
// between its steps, not inside the initial LP, preprocessing or the root
// cut loop, where a solve could run far past its time limit. Set on the solver before CBC copies it, it is cloned into
// every copy (preprocessing's, heuristics', the tree's).
class LPStop : public ClpEventHandler {
public:
	explicit LPStop(ls_ctx *c) : ClpEventHandler(), ctx_(c) {}
	LPStop(const LPStop &o) : ClpEventHandler(o), ctx_(o.ctx_) {}
	ClpEventHandler *clone() const override { return new LPStop(*this); }

	int event(Event e) override {
		if (e == endOfIteration && ctx_->cut.load() && !ctx_->post.load()) {
			ctx_->lp_stopped.store(1);
			return 0; // stop: the LP returns with status 5
		}
		return -1;
	}

private:
	ls_ctx *ctx_;
};

// Handler is cloned into every model CBC creates from the one it is
// passed in to; all clones share the context.
class Handler : public CbcEventHandler {
public:
	explicit Handler(ls_ctx *c) : CbcEventHandler(), ctx_(c) {}
	Handler(const Handler &o) : CbcEventHandler(o), ctx_(o.ctx_) {}
	CbcEventHandler *clone() const override { return new Handler(*this); }

	CbcAction event(CbcEvent e) override {
		if (ctx_->cancel.load()) {
			// Cancellation poses as a time limit: CBC then winds down
			// root cuts, heuristics and the tree search along its usual
			// limit path, which keeps the incumbent and reports an
			// honest status and bound. Returning "stop" instead ends the
			// search with status "finished", which reads as proven
			// optimality.
			if (model_ != nullptr) {
				model_->setMaximumSeconds(-1.0);
			}
			if (CbcModel *m = ctx_->main.load()) {
				m->setMaximumSeconds(-1.0);
			}
			return noAction;
		}
		report(ctx_);
		return noAction;
	}

private:
	ls_ctx *ctx_;
};

// The CbcMain1 callback is a plain function: it finds the context through
// this variable, which is safe because solves are serialised (see the Go
// side's solveSem).
static ls_ctx *current;

static int callback(CbcModel *model, int whereFrom) {
	ls_ctx *c = current;
	if (whereFrom == 3) {
		c->increment = model->getCutoffIncrement();
		c->main.store(model);
		report(c);
	} else if (whereFrom == 4) {
		c->post.store(1);
		c->increment = std::fmax(c->increment, model->getCutoffIncrement());
		report(c);
		c->main.store(nullptr);
	}
	// Stop before branch and bound if cancelled during preprocessing.
	if (whereFrom <= 3 && c->cancel.load()) {
		return 1;
	}
	return 0;
}

// nullbuf discards everything written to it.
class nullbuf : public std::streambuf {
protected:
	int overflow(int ch) override { return ch == EOF ? 0 : ch; }
	std::streamsize xsputn(const char *, std::streamsize n) override { return n; }
};

// devnull is opened once and never closed: message handlers capture the
// stdout FILE* when they are built, so one built during a solve may keep
// (and, in principle, write to) it afterwards.
static FILE *devnull;

// Silence redirects C stdio's stdout and stderr and the C++ standard
// streams to /dev/null for its lifetime. Some CBC heuristics print with
// printf whatever the log level, and message handlers print to the stdout
// FILE* they captured. Swapping the FILE pointers rather than file
// descriptor 1 leaves Go's own writes to os.Stdout (which use the
// descriptor directly) untouched even if they happen during a solve.
// Solves are serialised, so no two Silences overlap.
class Silence {
public:
	Silence() {
		fflush(stdout);
		fflush(stderr);
		if (devnull == nullptr) {
			devnull = fopen("/dev/null", "w");
		}
		if (devnull != nullptr) {
			out_ = stdout;
			err_ = stderr;
			stdout = devnull;
			stderr = devnull;
		}
		cout_ = std::cout.rdbuf(&buf_);
		cerr_ = std::cerr.rdbuf(&buf_);
		clog_ = std::clog.rdbuf(&buf_);
	}
	~Silence() {
		std::cout.rdbuf(cout_);
		std::cerr.rdbuf(cerr_);
		std::clog.rdbuf(clog_);
		if (out_ != nullptr) {
			fflush(devnull);
			stdout = out_;
			stderr = err_;
		}
	}

private:
	FILE *out_ = nullptr, *err_ = nullptr;
	nullbuf buf_;
	std::streambuf *cout_, *cerr_, *clog_;
};

static std::string num(double v) {
	char b[64];
	snprintf(b, sizeof b, "%.17g", v);
	return b;
}

static void solve(const ls_problem *p, ls_ctx *c, ls_result *r, double *x) {
	OsiClpSolverInterface solver;
	solver.loadProblem(p->ncols, p->nrows, p->start, p->index, p->value, p->collb, p->colub, p->obj, p->rowlb, p->rowub);
	for (int j = 0; j < p->ncols; j++) {
		if (p->isint[j]) {
			solver.setInteger(j);
		}
	}
	solver.messageHandler()->setLogLevel(0);
	solver.getModelPtr()->messageHandler()->setLogLevel(0);
	LPStop lpStop(c);
	solver.getModelPtr()->passInEventHandler(&lpStop);

	CbcModel model(solver);
	model.setLogLevel(0);
	model.messageHandler()->setLogLevel(0);
	Handler handler(c);
	model.passInEventHandler(&handler);

	if (p->mipstart != nullptr) {
		// CbcMain1 matches the start to columns by name.
		std::vector<std::pair<std::string, double>> start;
		start.reserve(p->ncols);
		OsiSolverInterface *s = model.solver();
		s->setIntParam(OsiNameDiscipline, 2);
		for (int j = 0; j < p->ncols; j++) {
			std::string name = "c" + std::to_string(j);
			s->setColName(j, name);
			start.emplace_back(name, p->mipstart[j]);
		}
		model.setMIPStart(start);
	}

	CbcSolverUsefulData data;
	data.noPrinting_ = true;
	// CbcMain1 would otherwise install its own SIGINT handler, taking
	// Ctrl-C away from the Go runtime.
	data.useSignalHandler_ = false;
	CbcMain0(model, data);
	model.setLogLevel(0);

	std::vector<std::string> args = {"lenspec", "-log", "0", "-slog", "0", "-timeMode", "elapsed"};
	if (p->time_limit > 0) {
		args.insert(args.end(), {"-sec", num(p->time_limit)});
	}
	if (p->threads > 1) {
		args.insert(args.end(), {"-threads", std::to_string(p->threads)});
	}
	if (p->use_cutoff) {
		args.insert(args.end(), {"-cutoff", num(p->cutoff)});
	}
	if (p->solution_limit > 0) {
		args.insert(args.end(), {"-maxSolutions", std::to_string(p->solution_limit)});
	}
	if (p->rel_gap > 0) {
		args.insert(args.end(), {"-ratioGap", num(p->rel_gap)});
	}
	if (p->abs_gap > 0) {
		args.insert(args.end(), {"-allowableGap", num(p->abs_gap)});
	}
	if (p->extra) {
		std::string cur;
		for (const char *q = p->extra;; q++) {
			if (*q == '\n' || *q == 0) {
				if (!cur.empty())
					args.push_back(cur);
				cur.clear();
				if (*q == 0)
					break;
			} else {
				cur.push_back(*q);
			}
		}
	}
	args.insert(args.end(), {"-solve", "-quit"});
	std::vector<const char *> argv;
	for (const std::string &a : args) {
		argv.push_back(a.c_str());
	}

	current = c;
	switch (p->inject_exception) {
	case 1:
		throw CoinError("injected for a test", "solve", "lenspecShim");
	case 2:
		throw std::runtime_error("injected for a test");
	case 3:
		throw 42;
	}
	r->main_return = CbcMain1(int(argv.size()), argv.data(), model, callback, data);
	current = nullptr;

	r->ran = 1;
	r->status = model.status();
	r->secondary = model.secondaryStatus();
	r->proven_optimal = model.isProvenOptimal();
	r->proven_infeasible = model.isProvenInfeasible();
	r->unbounded = model.isContinuousUnbounded();
	r->abandoned = model.isAbandoned();
	r->bound = model.getBestPossibleObjValue();
	r->nodes = model.getNodeCount();
	const double *best = model.bestSolution();
	r->has_solution = best != nullptr && model.getMinimizationObjValue() < kNoSolution;
	r->objective = model.getMinimizationObjValue();
	if (r->has_solution) {
		for (int j = 0; j < p->ncols; j++) {
			x[j] = best[j];
		}
	}
}

static void set_message(ls_result *r, const std::string &msg) {
	size_t n = std::min(msg.size(), sizeof r->message - 1);
	memcpy(r->message, msg.data(), n);
	r->message[n] = 0;
}

extern "C" void ls_solve(const ls_problem *p, ls_ctx *c, ls_result *r, double *x) {
	*r = ls_result{};
	Silence quiet;
	// CBC and CLP throw CoinError, which does not derive from
	// std::exception; its message is what tells a user what went wrong,
	// so it is caught first and kept.
	try {
		solve(p, c, r, x);
	} catch (CoinError &e) {
		r->exception = 1;
		std::string msg = "CoinError in " + e.className() + "::" + e.methodName() + ": " + e.message();
		if (e.lineNumber() >= 0) {
			msg += " (" + e.fileName() + ":" + std::to_string(e.lineNumber()) + ")";
		}
		set_message(r, msg);
	} catch (std::exception &e) {
		r->exception = 1;
		set_message(r, std::string("C++ exception: ") + e.what());
	} catch (...) {
		r->exception = 1;
		set_message(r, "unknown C++ exception");
	}
	// An exception skips the resets in solve: the model these pointed
	// to is gone.
	current = nullptr;
	c->main.store(nullptr);
	r->cancelled = c->cancel.load();
	r->lp_stopped = c->lp_stopped.load();
	r->stop_bound = c->last_bound;
	r->increment = c->increment;
}

extern "C" uintptr_t ls_sigint_handler(void) {
	struct sigaction sa;
	if (sigaction(SIGINT, nullptr, &sa) != 0) {
		return 0;
	}
	return reinterpret_cast<uintptr_t>(sa.sa_handler);
}

// clp_c_layout is how CLP 1.17's C interface (Clp_C_Interface.cpp) lays out
// a Clp_Simplex: the ClpSimplex first. ls_lp_set_deadline checks that the
// pointer found there is the model the C interface itself uses.
struct clp_c_layout {
	ClpSimplex *model;
};

// WallStop stops a simplex solve at the end of the first iteration past a
// wall-clock deadline.
class WallStop : public ClpEventHandler {
public:
	explicit WallStop(double deadline) : ClpEventHandler(), deadline_(deadline) {}
	WallStop(const WallStop &o) : ClpEventHandler(o), deadline_(o.deadline_) {}
	ClpEventHandler *clone() const override { return new WallStop(*this); }

	int event(Event e) override {
		if (e == endOfIteration && deadline_ >= 0 && CoinWallclockTime() >= deadline_) {
			return 0; // stop: the solve returns with status 5
		}
		return -1;
	}

private:
	double deadline_;
};

extern "C" int ls_lp_set_deadline(void *clp, double seconds) {
	Clp_Simplex *p = static_cast<Clp_Simplex *>(clp);
	ClpSimplex *m = reinterpret_cast<clp_c_layout *>(p)->model;
	if (m == nullptr || m->numberColumns() != Clp_numberColumns(p) || m->numberRows() != Clp_numberRows(p) ||
	    m->objective() != Clp_getObjCoefficients(p) || m->getRowPrice() != Clp_getRowPrice(p)) {
		return 0;
	}
	WallStop h(seconds < 0 ? -1.0 : CoinWallclockTime() + seconds);
	m->passInEventHandler(&h);
	return 1;
}
