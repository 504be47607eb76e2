// Package experiment runs lenspec's long jobs — attacks and verification
// over a data set and a grid of radii — and owns what makes their results
// trustworthy: versioned record types, resume keys, sharding, per-sample
// seeds, witness files and summaries. The CLI only parses flags and calls
// it, so a library user reproduces every CLI result.
//
// # Records and keys
//
// Every unit of work (one sample at one radius, for one method) is one JSON
// line with schema_version 1, keyed by everything that changes its result:
// the model by content (model_sha256, not its path), the data set (name,
// split, generation seed), the sample index, the radius, the method and
// a settings object holding every other setting (K̂, step cap, budget,
// seeds, solver, phases…). A rerun with a setting changed has other keys:
// it does the work instead of skipping it, and summaries select the
// records of the experiment asked for. Records written before schema 1
// (the CLI's "schema 0") are read through a migration.
//
// # Writers, failures, seeds
//
// A results file has one writer (results.Open locks it); shards write
// files of their own (Shard.Path) that Merge joins. Merge, the summaries
// and ReadRun apply one set of rules (Join): one experiment, each unit
// once, records of one unit that disagree refused or resolved by a rule
// that never depends on the order of the files. A unit that fails — a
// solver error, a recovered panic — is recorded with its error and the run
// goes on; one that killed the process twice (an attempt marker with no
// record, twice) is recorded as crashed instead of retried forever, and
// every run whose units include it ends with a CrashedError naming it. Every
// random choice for sample i comes from PCG(seed, i), so a sample's result
// does not depend on batch size, shard or resume. Witness files are named
// by their record's key.
package experiment
